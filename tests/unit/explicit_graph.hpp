// An explicit DAG for tests: the iteration drawn node by node, whose longest path the model's
// walks must reproduce (overlap_graph.tests.cpp, overlap_interleaved.tests.cpp).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

namespace poseidon::testing {

// An explicit DAG: nodes with durations and successor lists, longest path by Kahn's order.
struct Graph {
    std::vector<double> dur;
    std::vector<std::vector<int>> succ;
    int add(double d) {
        dur.push_back(d);
        succ.emplace_back();
        return static_cast<int>(dur.size()) - 1;
    }
    void edge(int u, int v) { succ[u].push_back(v); }
    double longest_path() const {
        const int N = static_cast<int>(dur.size());
        std::vector<int> indeg(N, 0);
        for (const auto& l : succ)
            for (int v : l) ++indeg[v];
        std::vector<double> start(N, 0.0);
        std::vector<int> ready;
        for (int u = 0; u < N; ++u)
            if (indeg[u] == 0) ready.push_back(u);
        double best = 0;
        int seen = 0;
        while (!ready.empty()) {
            const int u = ready.back();
            ready.pop_back();
            ++seen;
            const double fin = start[u] + dur[u];
            best = std::max(best, fin);
            for (int v : succ[u]) {
                start[v] = std::max(start[v], fin);
                if (--indeg[v] == 0) ready.push_back(v);
            }
        }
        REQUIRE(seen == N);  // acyclic
        return best;
    }
};

}  // namespace poseidon::testing
