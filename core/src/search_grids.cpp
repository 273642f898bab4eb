// The grids of the search (docs/search.md, "Expert parallelism" and "Context parallelism"): an MoE
// model is searched once per expert grid, a long sequence once per context-parallel size (both:
// once per pair), every stage of a plan on the same grid and size, and the top K of the searches
// merged. Each search is the whole pruned search of docs/search.md with that grid's costs, so
// pruned = exhaustive holds per grid and for the merge; a dense model at a short sequence is
// searched by run_search itself, untouched. A slice of the search (search_shard) walks the same
// grids, each with its own units.
#include <algorithm>
#include <array>

#include "grid_rules.hpp"
#include "search_driver.hpp"

namespace poseidon::detail {

std::vector<std::pair<int, int>> expert_grids(const Scenario& sc, const SearchOptions& options) {
    std::vector<std::pair<int, int>> grids;
    if (!sc.model.is_moe()) return {{1, 1}};
    const int gpus = sc.cluster.num_gpus();
    const int E = sc.model.num_experts;
    if (!options.ep_sizes.empty() || !options.etp_sizes.empty()) {
        // the sizes the user fixed (check_grid_options refused the ones that cannot be), each with
        // the search's own sizes of the other kind: etp 1, or every ep the search tries
        std::vector<int> eps = options.ep_sizes, etps = options.etp_sizes;
        if (eps.empty())
            for (int ep = 1; ep <= E && ep <= gpus; ep *= 2)
                if (E % ep == 0) eps.push_back(ep);
        if (etps.empty()) etps = {1};
        for (int ep : eps)
            for (int etp : etps)
                if (static_cast<std::int64_t>(ep) * etp <= gpus) grids.push_back({ep, etp});
        std::sort(grids.begin(), grids.end(), [](const auto& a, const auto& b) {
            return std::make_pair(std::int64_t{a.first} * a.second, a.first) > std::make_pair(std::int64_t{b.first} * b.second, b.first);
        });
        return grids;
    }
    // Megatron-Core's usual sizes: powers of two that divide the experts, up to the cluster
    // (a stage whose GPUs a size does not divide is refused as a candidate, stage_costs.cpp).
    // ETP 1, the Megatron-Bridge recipes' choice, except below.
    for (int ep = 1; ep <= E && ep <= gpus; ep *= 2)
        if (E % ep == 0) grids.push_back({ep, 1});
    // Where ep reaches the experts of a model with few large ones (at most 16: Mixtral's 8, Llama 4
    // Scout's 16), each expert's FFN may be split further over etp GPUs of a node (Megatron-Core's
    // expert tensor parallelism), as their memory may need: etp 2, 4, 8 within the largest node.
    // With many small experts (128, 256) a stage of ep GPUs already holds one or two each, and
    // splitting them only shrinks their GEMMs: not searched, to keep the search's budget.
    int node = 1;
    for (const Group& g : sc.cluster.groups) node = std::max(node, g.gpus_per_node);
    if (!grids.empty() && grids.back().first == E && E <= 16)
        for (int etp = 2; etp <= 8 && etp <= node && static_cast<std::int64_t>(E) * etp <= gpus; etp *= 2)
            if (sc.model.moe_ffn_hidden_size % etp == 0) grids.push_back({E, etp});
    // largest first: the widest sharding fits where a small ep runs out of memory, so its plans
    // bound the later grids' searches (a grid without a plan of its own would otherwise walk its
    // whole space unbounded)
    std::reverse(grids.begin(), grids.end());
    return grids;
}

SearchRun run_parallel_grids(const Scenario& sc, const SearchOptions& options, int threads) {
    return run_grids(sc, options, [threads](const Scenario& one, const SearchOptions& o) { return run_search(one, o, threads); });
}

std::vector<int> context_parallel_sizes(const Scenario& sc, const SearchOptions& options) {
    if (!options.cp_sizes.empty()) {
        std::vector<int> sizes = options.cp_sizes;
        std::sort(sizes.rbegin(), sizes.rend());
        return sizes;
    }
    // Context parallelism splits every sequence over cp ranks (Megatron-Core's
    // --context-parallel-size, one size for the whole model): searched where the sequence is long,
    // from 8,192 tokens (Megatron-Bridge's Llama 3.1 405B recipes run CP 2 at 8,192; shorter
    // sequences leave each rank attention blocks too short to hide the ring's exchange), powers of
    // two that split the sequence into 2 cp equal chunks (the causal load balancing), each rank
    // keeping at least 4,096 tokens (so cp 2 at 8,192, up to 8 at 32,768), at most 16 and the
    // cluster. Largest first, as the expert grids.
    // (not with a sliding window over the p2p ring, which Transformer Engine does not run)
    std::vector<int> sizes{1};
    const int s = sc.model.seq_length, gpus = sc.cluster.num_gpus();
    const bool ring_refused = any_windowed(sc.model) && sc.training.cp_comm_type == "p2p";
    if (s >= kCpMinSeqLength && !ring_refused)
        for (int cp = 2; cp <= 16 && cp <= gpus && s / cp >= kCpMinSeqLength / 2; cp *= 2)
            // (Ulysses: only sizes that split the heads and the KV heads, a2a_heads_problem)
            if (s % (2 * cp) == 0 && (sc.training.cp_comm_type != "a2a" || a2a_heads_problem(sc.model, 1, cp).empty())) sizes.push_back(cp);
    std::reverse(sizes.begin(), sizes.end());
    return sizes;
}

void check_grid_options(const Scenario& sc, const SearchOptions& options) {
    Problems problems;
    const ModelSpec& m = sc.model;
    const int gpus = sc.cluster.num_gpus();
    const auto at = [](const char* key, std::size_t i) { return std::string("options.") + key + "[" + std::to_string(i) + "]"; };
    for (std::size_t i = 0; i < options.cp_sizes.size(); ++i) {
        const int cp = options.cp_sizes[i];
        if (cp == 1) continue;
        if (cp > gpus)
            problems.add(at("cp_sizes", i), std::to_string(cp) + " is more than the cluster's " + std::to_string(gpus) + " GPUs");
        else
            for (const std::string& e : cp_size_problems(sc, cp)) problems.add(at("cp_sizes", i), e);
        // Ulysses splits the heads over the cp ranks: a cp that no TP degree leaves a share of heads
        // is no plan (validate_plan refuses it per stage), not "no feasible plan"
        if (sc.training.cp_comm_type == "a2a")
            if (const std::string e = a2a_heads_problem(m, 1, cp); !e.empty()) problems.add(at("cp_sizes", i), e);
    }
    const auto expert_sizes = [&](const char* key, const std::vector<int>& sizes, bool ep) {
        for (std::size_t i = 0; i < sizes.size(); ++i)
            if (const std::string e = expert_size_problem(m, sizes[i], ep); !e.empty())
                problems.add(at(key, i), e);
            else if (ep && sizes[i] > gpus)
                problems.add(at(key, i), std::to_string(sizes[i]) + " is more than the cluster's " + std::to_string(gpus) + " GPUs");
    };
    expert_sizes("ep_sizes", options.ep_sizes, true);
    expert_sizes("etp_sizes", options.etp_sizes, false);
    if (problems.empty() && m.is_moe() && (!options.ep_sizes.empty() || !options.etp_sizes.empty()) && expert_grids(sc, options).empty())
        problems.add(options.etp_sizes.empty() ? "options.ep_sizes" : "options.etp_sizes",
                     "no expert grid ep x etp fits the cluster's " + std::to_string(gpus) + " GPUs; expected ep x etp at most " + std::to_string(gpus));
    problems.throw_if_any();
}

std::vector<std::array<int, 3>> search_grids(const Scenario& sc, const SearchOptions& options) {
    std::vector<std::array<int, 3>> out;
    for (int cp : context_parallel_sizes(sc, options))
        for (const auto& [ep, etp] : expert_grids(sc, options)) out.push_back({cp, ep, etp});
    return out;
}

SearchRun run_in_turn(std::size_t n, const SearchOptions& options, const std::function<SearchRun(std::size_t, SearchOptions)>& run_variant,
                      const std::function<void(std::size_t, Plan&)>& tag, std::int64_t first_round_ticks) {
    SearchRun out;
    TopK top(options.top_k);
    bool first = true, stopped = false;
    // one variant's search: bounded by the K-th key of what was found so far (as a slice of a
    // sharded search is bounded by the others': docs/search.md, "Shards"), given the time the
    // ones before it left; false when it stopped for the node budget
    std::vector<std::vector<Found>> found_by(n);
    auto run_one = [&](std::size_t i, std::int64_t budget, bool again) {
        SearchOptions o = options;
        if (again) {
            // bounded by every plan found so far, its own included; its own plans order its walk
            // (their sizes first). Under its own best key its dives find nothing, and the walk by
            // root bounds alone started elsewhere (3 x 4096 x 128 of the MoE sweep missed in 20 s
            // the plan it finds in 5 s); bounded by the others' plans alone, the dives found its
            // own again, but the walk ran under a bound up to 28 % above its best (3 x 1024 x 80:
            // the fifth grid's second walk 3.2 s, 1.7 s under its own)
            for (const Found& f : found_by[i]) o.order_hints.push_back({f.plan.micro_batch_size, f.plan.num_micro_batches, f.time});
        }
        const double bound = top.threshold();
        o.prune_above_s = std::min(o.prune_above_s, bound);
        o.node_budget = budget;
        if (!first) {
            o.time_limit_s = options.time_limit_s - seconds_since(out.t0);
            if (o.time_limit_s <= 0) {
                out.stats.stopped_by = "time limit";
                out.stats.complete = false;
                stopped = true;
                return true;
            }
        }
        SearchRun run = run_variant(i, o);
        const bool budget_out = run.stats.stopped_by == "node budget";
        if (budget_out) {
            // its work counts; its stop does not: the second round searches the variant again
            run.stats.stopped_by.clear();
            run.stats.complete = true;
        }
        if (first) out.t0 = run.t0, out.soft_deadline_s = run.soft_deadline_s, out.stats = run.stats;
        else add_stats(out.stats, run.stats);
        first = false;
        found_by[i] = run.found;
        for (Found& f : run.found) {
            if (tag) tag(i, f.plan);
            top.insert(f.time, std::move(f.plan), f.dag_time);
        }
        if (!run.stats.stopped_by.empty()) stopped = true;
        return !budget_out;
    };
    // First round (first_round_ticks > 0): each variant for at most that many tree nodes, so that
    // a variant whose walk is long under a poor bound does not hold back one whose dive finds the
    // best plans (4 x 1024 x 128 of the MoE sweep: the fifth expert grid's dive finds a plan 3 %
    // above the optimum in under a second, after 45 s of the grids before it under a bound 37-52 %
    // above). Second round: the variants it stopped, whole, in turn, each bounded by the plans of
    // all the others. Every variant is searched whole once, so the merged top K is the same.
    std::vector<std::size_t> again;
    for (std::size_t i = 0; i < n && !stopped; ++i)
        if (!run_one(i, first_round_ticks, false)) again.push_back(i);
    for (std::size_t i : again) {
        if (stopped) break;
        run_one(i, 0, true);
    }
    out.found = top.list();
    return out;
}

SearchRun run_grid_set(const Scenario& sc, const SearchOptions& options, const std::function<SearchRun(const Scenario&, const SearchOptions&)>& run_one) {
    const auto grids = search_grids(sc, options);
    const auto egrids = expert_grids(sc, options);
    const auto cps = context_parallel_sizes(sc, options);
    const auto one_grid = [&](std::size_t i, SearchOptions o) {
        const auto& [cp, ep, etp] = grids[i];
        Scenario one = sc;
        one.search_ep = ep, one.search_etp = etp, one.search_cp = cp;
        // stages that mix GPU types are one-stage plans of the context-parallel size 1
        if (cp > 1) o.mixed_stages = false;
        return run_one(one, o);
    };
    SearchRun out = grids.size() == 1 ? one_grid(0, options) : run_in_turn(grids.size(), options, one_grid, {}, options.exhaustive ? 0 : options.grid_first_round_nodes);
    const bool fixed_experts = !options.ep_sizes.empty() || !options.etp_sizes.empty();
    if (egrids.size() > 1 || egrids[0] != std::pair<int, int>{1, 1} || (fixed_experts && sc.model.is_moe())) {
        std::string list;
        for (const auto& [ep, etp] : egrids) list += (list.empty() ? "" : ", ") + std::to_string(ep) + "x" + std::to_string(etp);
        out.stats.notes.push_back("expert parallelism: " + std::to_string(egrids.size()) + (egrids.size() == 1 ? " expert grid" : " expert grids") +
                                  " searched (ep x etp: " + list + (fixed_experts ? std::string(", as ") +
                                                      (options.ep_sizes.empty() ? "options.etp_sizes fixes them" : options.etp_sizes.empty() ? "options.ep_sizes fixes them" : "options.ep_sizes and options.etp_sizes fix them")
                                                : std::string()) +
                                  "), every stage of a plan on the same one");
    }
    if (cps.size() > 1 || !options.cp_sizes.empty()) {
        std::string list;
        for (int cp : cps) list += (list.empty() ? "" : ", ") + std::to_string(cp);
        out.stats.notes.push_back("context parallelism: cp " + list + " searched (" +
                                  (options.cp_sizes.empty() ? "seq_length " + std::to_string(sc.model.seq_length) + " >= " + std::to_string(kCpMinSeqLength)
                                                            : std::string("as options.cp_sizes fixes them")) +
                                  "), every stage of a plan with the same cp" +
                                  (options.mixed_stages && cps.size() > 1 ? "; stages that mix GPU types with cp 1 only" : "") +
                                  (options.mixed_stages && cps.size() == 1 && cps[0] > 1 ? "; no stages that mix GPU types (they run cp 1)" : ""));
        // a size the user fixed below what the search itself keeps per rank
        for (int cp : options.cp_sizes)
            if (cp > 1 && sc.model.seq_length / cp < kCpMinSeqLength / 2)
                out.stats.notes.push_back("options.cp_sizes: cp " + std::to_string(cp) + " leaves " + std::to_string(sc.model.seq_length / cp) +
                                          " tokens of each sequence per rank, fewer than the " + std::to_string(kCpMinSeqLength / 2) +
                                          " the search keeps by itself (a rank's attention that short hides little of the exchange)");
    }
    return out;
}

}  // namespace poseidon::detail
