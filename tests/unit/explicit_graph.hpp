// An explicit DAG for tests: the iteration drawn node by node, whose longest path the model's
// walks must reproduce (overlap_graph.tests.cpp, overlap_interleaved.tests.cpp).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "poseidon/cost_model.hpp"
#include "poseidon/dag.hpp"

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

// One F or B pass as a sub-graph: `in` its first node, `out` its last.
struct Pass {
    int in, out;
};

// The edges between the passes of a pipeline of p stages, V chunks each (chunks in data order, V
// = 1: 1F1B): the sends as nodes between F(v, j) and F(v+1, j) and between B(v, j) and B(v-1, j),
// the last virtual stage's forward before its backward, each stage's order (1F1B or Megatron's
// interleaved one) and the order of each stage's sends on its link. Returns per stage the out node
// of its last pass.
inline std::vector<int> pipeline_edges(Graph& G, const std::vector<Pass>& F, const std::vector<Pass>& B, const std::vector<StageTimes>& chunks, int p, int V,
                                       std::int64_t m) {
    const std::int64_t PV = static_cast<std::int64_t>(p) * V;
    std::vector<int> SF(PV * m, -1), SB(PV * m, -1);
    for (std::int64_t v = 0; v < PV; ++v)
        for (std::int64_t j = 0; j < m; ++j) {
            if (v + 1 < PV) {
                SF[v * m + j] = G.add(chunks[v].send_forward_s);
                G.edge(F[v * m + j].out, SF[v * m + j]);
                G.edge(SF[v * m + j], F[(v + 1) * m + j].in);
            } else {
                G.edge(F[v * m + j].out, B[v * m + j].in);
            }
            if (v > 0) {
                SB[v * m + j] = G.add(chunks[v].send_backward_s);
                G.edge(B[v * m + j].out, SB[v * m + j]);
                G.edge(SB[v * m + j], B[(v - 1) * m + j].in);
            }
        }
    std::vector<int> last(p, -1);
    for (int s = 0; s < p; ++s) {
        std::vector<ChunkPass> order;
        if (V == 1) {
            std::vector<std::int64_t> o;
            one_f_one_b_order(s, p, m, o);
            for (auto e : o) order.push_back(e >= 0 ? ChunkPass{0, e, true} : ChunkPass{0, -e - 1, false});
        } else {
            interleaved_order(s, p, V, m, order);
        }
        int prev = -1, prev_sf = -1, prev_sb = -1;
        for (const ChunkPass& u : order) {
            const std::int64_t v = static_cast<std::int64_t>(u.chunk) * p + s, j = u.micro_batch;
            const Pass n = u.forward ? F[v * m + j] : B[v * m + j];
            if (prev >= 0) G.edge(prev, n.in);
            prev = n.out;
            if (u.forward && v + 1 < PV) {
                if (prev_sf >= 0) G.edge(prev_sf, SF[v * m + j]);
                prev_sf = SF[v * m + j];
            }
            if (!u.forward && v > 0) {
                if (prev_sb >= 0) G.edge(prev_sb, SB[v * m + j]);
                prev_sb = SB[v * m + j];
            }
        }
        last[s] = prev;
    }
    return last;
}

}  // namespace poseidon::testing
