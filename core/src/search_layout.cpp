// The walk above a configuration (docs/search.md, "The method"): group blocks appended in
// pipeline order, best bound first, then TP per block run by run; each complete configuration
// goes to the layer split (search_split.cpp).
#include <algorithm>

#include "search_walk.hpp"

namespace poseidon::detail {

Walker::Walker(Shared& sh, bool exhaustive, bool alone)
    : sh_(sh),
      sc_(sh.sc),
      L_(sh.sc.model.num_layers),
      G_(static_cast<int>(sh.sc.cluster.groups.size())),
      lmin_(sh.opt.empty_stages ? 0 : 1),
      lmin_mid_(middle_may_be_empty(sh.sc, sh.opt.empty_stages) ? 0 : 1),
      lead_(leading_dense_blocks(sh.sc.model)),
      halves_(node_halves(sh.sc.cluster)),
      all_groups_(G_ >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << G_) - 1),
      exhaustive_(exhaustive),
      alone_(alone) {}

void Walker::bind(const MbsCtx& c) {
    scale_ = c.scale;
    rethreshold();
    if (suffix_id_ != c.id) {
        suffix_.clear();
        suffix_id_ = c.id;
    }
}

void Walker::enter(MbsCtx& c) {
    bind(c);
    if (alone_) {
        costs_ = c.costs.get();
        return;
    }
    auto& own = own_[c.id];
    if (!own) own = std::make_unique<Costs>(*c.costs);
    costs_ = own.get();
}

void Walker::leave() {
    for (const auto& [id, own] : own_) stats.cost_probes += own->probes();
    own_.clear();
    costs_ = nullptr;
}

void Walker::flush() {
    sh_.evaluated.fetch_add(stats.evaluated - flushed_evaluated_, std::memory_order_relaxed);
    sh_.pruned.fetch_add(stats.pruned - flushed_pruned_, std::memory_order_relaxed);
    flushed_evaluated_ = stats.evaluated;
    flushed_pruned_ = stats.pruned;
}

void Walker::walk(MbsCtx& c, std::int64_t dive_ticks, bool greedy) {
    Task root;  // an empty prefix; its bound 0 is never cut
    root.ctx = &c;
    run_task(root, dive_ticks, greedy);
}

void Walker::expand(MbsCtx& c, const Task& node, std::vector<Task>& out) {
    bind(c);
    blocks_ = node.prefix;
    std::vector<Child> ks;
    kids(c, node.S, node.used, ks);
    for (const Child& k : ks) {
        Task t;
        t.ctx = &c;
        t.bound = k.bound;
        t.order = k.key;
        t.prefix = node.prefix;
        t.S = node.S;
        t.used = node.used;
        if (k.g < 0) {
            t.stop_here = true;
        } else {
            t.prefix.push_back({k.g, k.opt, -1, 0, c.opts[k.g][k.opt].o.count});
            t.S += c.opts[k.g][k.opt].o.count;
            t.used |= std::uint64_t{1} << k.g;
        }
        out.push_back(std::move(t));
    }
    blocks_.clear();
}

void Walker::run_task(const Task& t, std::int64_t dive_ticks, bool greedy) {
    if (halted()) return;
    MbsCtx& c = *t.ctx;
    if (!exhaustive_ && sh_.cut(t.bound / c.scale)) {
        ++stats.pruned;
        return;
    }
    enter(c);
    blocks_ = t.prefix;
    dive_left_ = dive_ticks;
    greedy_ = greedy;
    if (t.stop_here)
        stop_here(c, t.S, t.used);
    else
        layout_dfs(c, t.S, t.used);
    if (!defer_to_end) split_deferred();
    dive_left_ = -1;
    greedy_ = false;
    abort_ = false;
    blocks_.clear();
}

void Walker::run_single(MbsCtx& c, const Plan& plan, std::vector<std::vector<int>>* visited) {
    enter(c);
    visited_ = visited;
    cfg_.clear();
    std::vector<int> cursor(G_, 0);
    for (const auto& st : plan.stages) {
        if (st.replicas.size() != 1) throw InputError("plan.stages", "ridge_report needs homogeneous stages");
        const auto& r = st.replicas[0];
        CfgStage cs;
        cs.g = r.group;
        cs.tp = r.tp;
        cs.size = r.tp * r.count * st.cp;  // (the walk's scenario carries the plan's cp: run_single)
        cs.offset = cursor[r.group];
        cs.table = &costs_->middle(cs.g, cs.size, cs.tp);
        cursor[r.group] += cs.size;
        cfg_.push_back(cs);
    }
    run_config(c);
}

void Walker::dive_config_of(MbsCtx& c, const Plan& plan, std::int64_t ticks) {
    for (const auto& st : plan.stages)
        if (st.replicas.size() != 1) return;  // a stage of mixed replicas: no configuration of the walk
    dive_left_ = ticks;
    run_single(c, plan, nullptr);
    dive_left_ = -1;
    abort_ = false;
}

// Whether an earlier pass searched the configuration blocks_ describes.
bool Walker::searched_before(const MbsCtx& c) const {
    if (first_pass) return false;
    bool split = false, rises = false;
    for (const auto& b : blocks_) {
        if (b.prev_tp == 0) continue;
        split = true;
        rises = rises || c.opts[b.g][b.opt].tps[b.tpi].tp > b.prev_tp;
    }
    if (tp_mode == TpMode::non_increasing) return !split;
    return !rises;  // TpMode::any: the non-increasing pass had every sequence without a rise
}

// The children of a layout node, best bound first: extend with a block of an unused group, or
// stop here (opt = -1). The second half of a node comes after its first, with no other block of
// the user's group between them, and the pipeline does not end between them: in the user's groups,
// whose GPUs are taken in stage order, the halves then share one node (docs/search.md, step 2).
void Walker::kids(MbsCtx& c, int S, std::uint64_t used, std::vector<Child>& out) {
    const bool open_half = halves_.open(used);
    // counted here and added once: tens of millions of options are refused on the four-type
    // shapes, and a lookup in the string-keyed counts each time was a quarter of their search
    std::int64_t over_limit = 0, short_of_memory = 0;
    if (!exhaustive_) prefix_inverse(c);
    for (int g : c.group_order) {
        if ((used >> g) & 1) continue;
        if (!halves_.may_place(g, used, sc_.cluster.group_origin)) continue;
        const long long others = hostable(c, used | (std::uint64_t{1} << g), true);  // the same for every option of g
        // every option of g cut at once (group_cut): still counted one by one below, unbounded
        const bool all_cut = !exhaustive_ && group_cuts_enabled && group_cut(c, S, used, g, others);
        stats.groups_cut += all_cut;
        for (int oi = 0; oi < static_cast<int>(c.opts[g].size()); ++oi) {
            tick();
            const OptInfo& info = c.opts[g][oi];
            if (S + info.o.count > c.smax) {
                ++over_limit;
                continue;
            }
            if (others + static_cast<long long>(info.o.count) * info.cap < L_) {
                ++short_of_memory;
                continue;
            }
            if (all_cut) {
                ++stats.pruned;
                continue;
            }
            double b = 0, key = 0;
            if (!exhaustive_) {
                const std::uint64_t with = used | (std::uint64_t{1} << g);
                const int open = c.smax - S - info.o.count;
                if (child_pre_cut(c, info, with, open, S + info.o.count)) {
                    ++stats.pretest_cut;
                    ++stats.pruned;
                    continue;
                }
                blocks_.push_back({g, oi, -1, 0, info.o.count});
                const double lb = layout_bound(c, with, open);
                b = sched_bound(c, lb, with, 0);
                // With every group placed the child's one child is its stop: a stop that its
                // bound cuts is cut here, the child unvisited (3.4 million such children on
                // 4 x 4096 x 24, 99 % cut at their stop). Its bound is not kept: one taken at
                // a later threshold (caps from it) may cut more, so a kept child is visited
                // and bounded as before, and the search is the same.
                if (with == all_groups_ && !cut(b) && cut(stop_bound(c, lb, with, S + info.o.count))) b = kInf;
                if (!cut(b)) {
                    // (no group left: no suffix, whose summaries are all the two bounds differ in)
                    const double one = with == all_groups_ ? lb : layout_bound(c, with, open, false);
                    key = c.sched_1f1b ? one : sched_bound(c, one, with, 0, false);
                }
                blocks_.pop_back();
                if (cut(b)) {
                    ++stats.pruned;
                    continue;
                }
            }
            out.push_back({b, g, oi, key});
        }
    }
    if (!blocks_.empty() && !open_half) {  // the layout may stop here
        if (hostable(c, used, false) < L_)
            ++short_of_memory;
        else {
            double b = 0, key = 0;
            if (!exhaustive_) {
                double one = 0;
                b = stop_bound(c, layout_bound(c, used, 0), used, S, &one);
                key = c.sched_1f1b ? one : b;
            }
            out.push_back({b, -1, -1, key});
        }
    }
    if (over_limit) stats.infeasible["stages over limit"] += over_limit;
    if (short_of_memory) stats.infeasible["memory"] += short_of_memory;
    if (!exhaustive_) std::stable_sort(out.begin(), out.end(), [](const Child& x, const Child& y) { return x.key < y.key; });
}

// The bound of the layout blocks_ (S stages, groups `used`) stopped where it is, over the schedules
// searched, given its LP bound `lb` (layout_bound with no stage open); `one` (if given) receives
// its 1F1B part.
double Walker::stop_bound(const MbsCtx& c, double lb, std::uint64_t used, int S, double* one_out) {
    // Family C's O(S log S) sweep only where its O(blocks) floor does not cut already: the bound
    // cuts exactly when it did with family C's own value. A stop that is not cut is ordered by its
    // 1F1B part (Child::key), so that part gets family C's value then.
    double one = lb;
    bool floored = false;
    if (!cut(one)) {
        const double f = family_c_floor(c, S);
        floored = cut(f);
        one = std::max(one, floored ? f : family_c_bound(c, S));
    }
    double b = sched_bound(c, one, used, S);
    // where only interleaved plans may remain: their bottleneck under the caps from the
    // threshold, every TP open (as in tp_dfs)
    if (!c.vs.empty() && !cut(b) && (!c.sched_1f1b || cut(one))) {
        const double t = ilv_tp_bound(c, S);
        b = std::max(b, c.sched_1f1b ? std::min(one, t) : t);
    }
    if (one_out) *one_out = floored && !cut(b) ? std::max(lb, family_c_bound(c, S)) : one;
    return b;
}

void Walker::layout_dfs(MbsCtx& c, int S, std::uint64_t used) {
    if (halted()) return;
    // one list per depth, kept: a node's children are listed 650,000 times on 4 x 4096 x 80
    const std::size_t depth = blocks_.size();
    if (kid_lists_.size() <= depth) kid_lists_.resize(depth + 1);
    std::vector<Child> ks = std::move(kid_lists_[depth]);
    ks.clear();
    kids(c, S, used, ks);
    struct Keep {  // hands the list back however the loop ends (by index: deeper calls may grow kid_lists_)
        std::vector<std::vector<Child>>& lists;
        std::size_t depth;
        std::vector<Child>& ks;
        ~Keep() { lists[depth] = std::move(ks); }
    } keep{kid_lists_, depth, ks};
    for (const Child& k : ks) {
        if (halted()) return;
        if (cut(k.bound)) {
            ++stats.pruned;
            continue;
        }
        if (k.g < 0) {
            stop_here(c, S, used);
            continue;
        }
        blocks_.push_back({k.g, k.opt, -1, 0, c.opts[k.g][k.opt].o.count});
        layout_dfs(c, S + c.opts[k.g][k.opt].o.count, used | (std::uint64_t{1} << k.g));
        blocks_.pop_back();
    }
}

// The configurations of exactly the layout blocks_: their memory caps, then TP.
void Walker::stop_here(MbsCtx& c, int S, std::uint64_t used) {
    if (!layout_caps(c, S)) {
        if (!halted()) ++stats.infeasible["memory"];
        return;
    }
    caps_known_ = true;
    tp_dfs(c, 0, S, used);
    caps_known_ = false;
}

// TP per stage, run by run: run bi takes TP index ti for its first k stages; when k is less than
// the run, the rest becomes a new run right after it that starts with another degree (every TP
// sequence is visited once, as its maximal runs). The whole run at one TP comes first (most plans
// want that), then the splits.
void Walker::tp_dfs(MbsCtx& c, std::size_t bi, int S, std::uint64_t used) {
    if (halted()) return;
    if (bi == blocks_.size()) {
        if (searched_before(c)) return;
        build_config(c, S);
        split_or_defer(c, S);
        return;
    }
    const BlockSel run = blocks_[bi];
    const OptInfo& info = c.opts[run.g][run.opt];
    const bool inherited = one_cut_;  // a cut of the 1F1B bounds above holds below
    // the 1F1B bounds of the TP choice made last (blocks_ up to bi)
    const auto one_f_one_b_cut = [&] { return tp_one_cut(c, used, S, bi, true); };
    for (int ti = 0; ti < static_cast<int>(info.tps.size()); ++ti) {
        const int tp = info.tps[ti].tp;
        if (run.prev_tp != 0 && (tp == run.prev_tp || (tp_mode == TpMode::non_increasing && tp > run.prev_tp))) continue;
        // a degree left for the rest of a split
        bool other = false;
        for (const auto& t : info.tps) other = other || (tp_mode == TpMode::non_increasing ? t.tp < tp : t.tp != tp);
        for (int k = run.count; k >= 1; --k) {
            if (k < run.count && (!other || tp_mode == TpMode::per_group)) break;
            tick();
            blocks_[bi].tpi = ti;
            blocks_[bi].count = k;
            if (k < run.count)
                blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(bi) + 1, BlockSel{run.g, run.opt, -1, run.first + k, run.count - k, tp});
            if (hostable_exact(bi) < L_)
                ++stats.infeasible["memory"];
            else if (!exhaustive_ && c.vs.empty() && one_f_one_b_cut())
                ++stats.pruned;
            else if (!exhaustive_ && !c.vs.empty()) {
                // both schedules: cut when the bounds of both cut; the configuration's split
                // search then skips 1F1B if only its bounds cut (one_cut_, run_config). The
                // interleaved bounds decide nothing where the 1F1B ones keep the branch.
                one_cut_ = inherited || !c.sched_1f1b || one_f_one_b_cut();
                const bool ilv_cut = one_cut_ && tp_ilv_cut(c, used, S);
                if (ilv_cut)
                    ++stats.pruned;
                else
                    tp_dfs(c, bi + 1, S, used);
                one_cut_ = inherited;
            } else
                tp_dfs(c, bi + 1, S, used);
            if (k < run.count) blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(bi) + 1);
            blocks_[bi] = run;
            if (halted()) return;
        }
    }
}

void Walker::build_config(const MbsCtx& c, int S) {
    cfg_.resize(S);
    int j = 0;
    for (const auto& b : blocks_) {
        const OptInfo& info = c.opts[b.g][b.opt];
        for (int q = 0; q < b.count; ++q, ++j) {
            CfgStage& cs = cfg_[j];
            cs.g = b.g;
            cs.size = info.o.size;
            cs.tp = info.tps[b.tpi].tp;
            cs.table = info.tps[b.tpi].table;
            cs.offset = (b.first + q) * info.o.size;
        }
    }
}

}  // namespace poseidon::detail
