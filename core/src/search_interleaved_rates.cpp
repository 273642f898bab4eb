// The chunk rates of the interleaved bounds (docs/search.md, "Bounds of interleaved plans", "Per
// V"): with V chunks a stage runs V passes per micro-batch, each of l / V layers, and every pass
// pays its own fixed cost (kernels, the TP collectives' latency, the norms around the block). The
// layout bound took the per-layer rate a = min_l c(l) / l over every layer count, reached by the
// largest stages, and the largest V (the smallest bubble): large V looked free there and then
// lost at the configuration, where the bottleneck over chunk tables charges each pass its fixed
// cost. Here, per V, a stage's chunk holds at most u_max = min(L, cap) / V layers (cap: the most
// a stage of its kind holds anywhere in a 1F1B pipeline, which bounds the interleaved stage too,
// docs/search.md "Assumptions" 4), so every chunk costs at least a_V u with
//   a_V = min_{1 <= u <= u_max} c(u) / u  >=  a,
// and the family-A LP with phi = a_V / V, mu = m a_V bounds every interleaved plan of that V.
#include <algorithm>

#include "search_walk.hpp"

namespace poseidon::detail {

void set_chunk_rates(MbsCtx& c, int L) {
    const double m = static_cast<double>(c.m);
    const std::size_t nv = c.vs.size();
    const int G = static_cast<int>(c.opts.size());
    c.rho_a_v.assign(nv, std::vector<double>(G, 0.0));
    for (int g = 0; g < G; ++g)
        for (OptInfo& info : c.opts[g]) {
            info.a_v.assign(nv, kInf);
            for (TpChoice& t : info.tps) {
                const Table& tb = c.costs->middle(g, info.o.size, t.tp);
                t.a_v.assign(nv, kInf);
                for (std::size_t vi = 0; vi < nv; ++vi) {
                    const int umax = std::min(L, t.cap) / c.vs[vi];
                    double a = kInf;
                    for (int u = 1; u <= umax; ++u) a = std::min(a, tb.c[u] / u);
                    t.a_v[vi] = a;
                    info.a_v[vi] = std::min(info.a_v[vi], a);
                }
            }
            for (std::size_t vi = 0; vi < nv; ++vi)
                if (info.a_v[vi] < kInf) c.rho_a_v[vi][g] = std::max(c.rho_a_v[vi][g], info.o.count / (m * info.a_v[vi]));
        }
    c.add_bytes(static_cast<std::int64_t>(nv * G * sizeof(double)));
    c.suf_ilv_v.clear();
    for (std::size_t vi = 0; vi < nv; ++vi) {
        const double V = c.vs[vi];
        // a stage that holds no chunk covers no layer (its LP step keeps v)
        std::vector<double> r = suffix_rates(c, [&](const OptInfo& o, double v) {
            return o.a_v[vi] < kInf ? lp_steps(v, o.a_v[vi] / V, c.keep_pow(vi, o.o.count)) : v;
        });
        if (r.empty()) break;
        c.add_bytes(static_cast<std::int64_t>(r.size() * sizeof(double)));
        c.suf_ilv_v.push_back(std::move(r));
    }
}

// The bound of ilv_layout_bound at one V (index vi), with every stage at its chunk rate: the LP of
// the interleaved family A over the blocks placed (TP chosen: that degree's rate, else the least
// over degrees) and, before them, the most a suffix of the unused groups covers at that rate (the
// exact suffix rate per set of groups, or the sum of their no-bubble rates).
double Walker::ilv_layout_bound_v(const MbsCtx& c, std::uint64_t used, bool complete, std::size_t vi) {
    const double V = c.vs[vi];
    const double v0 = complete ? 0.0 : open_rate(c.suf_ilv_v.empty() ? nullptr : &c.suf_ilv_v[vi], c.rho_a_v[vi], used);
    double v = v0;
    double opt_lb = 0;
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
        const OptInfo& info = c.opts[it->g][it->opt];
        opt_lb = std::max(opt_lb, rates_of(c, *it).opt_min);
        const double a = it->tpi < 0 ? info.a_v[vi] : info.tps[it->tpi].a_v[vi];
        if (a < kInf) v = lp_steps_to(v, V / a, c.keep_pow(vi, it->count));
    }
    return v > 0 ? L_ / v + ilv_dp0_block(c) + opt_lb : kInf;
}

}  // namespace poseidon::detail
