// A complete split of interleaved 1F1B (docs/search.md, "Bounds of interleaved plans"): the two
// bounds that cut it before it is costed (family C of the interleaved DAG, and that DAG on family
// C's chunk times), then the exact score, as `estimate` computes it. search_interleaved.cpp walks
// the splits; this file ends them.
#include <algorithm>

#include "poseidon/cost_model.hpp"
#include "search_bounds.hpp"
#include "search_walk.hpp"

namespace poseidon::detail {

// A walk of the lower DAG keeps its path when it stops for splits of at most this many passes per
// direction (its trace holds 4 ints per pass): beyond, it runs untraced in arrays freed after it.
constexpr std::int64_t kTracedPasses = std::int64_t{1} << 18;

// Stage s of the configuration holding l layers, at its position: its gradient sync and optimizer
// step depend on its parameters and replicas, not on the schedule (stage_costs.cpp computes both
// before evaluate_chunks splits the stage into chunks), so the cache's 1F1B times hold the
// interleaved stage's exactly. A middle stage reads the table; first and last stages are probed
// once per layer count.
const StageTimes& Walker::ilv_stage_times(int s, int l) {
    const CfgStage& cs = cfg_[s];
    return cs.pos == kMiddle ? itab_[s]->t[l] : costs_->times(cs.g, cs.size, cs.tp, cs.pos, l);
}

// What surely follows stage s's last pass before the barrier of the optimizer step in the
// interleaved DAG (dag_interleaved.cpp, sync_end): its dp_sync_s without overlap_grad_reduce;
// with it the buckets may have finished with the pass, and only the tied-embedding all-reduce of
// the first and last stage (emb_sync_, which the leaf adds to both, as estimate does) is sure.
double Walker::ilv_sync(int s, int l) {
    const int S = static_cast<int>(cfg_.size());
    const double emb = s == 0 || s == S - 1 ? emb_sync_ : 0.0;
    return sc_.training.overlap_grad_reduce ? emb : ilv_stage_times(s, l).dp_sync_s + emb;
}

// The chunk times of the split layers_ that its bounds take, before it is costed: chunks cost at
// least the cache's middle chunks of as many layers (A1; the first chunk of stage 0 and the last
// of stage S-1 the cache holds exactly); then stage 0's gradient sync and the slowest optimizer
// step of the split's stages (ilv_sync, ilv_stage_times), which every path of the bounds ends with.
void Walker::ilv_chunk_bounds() {
    const int S = static_cast<int>(cfg_.size()), V = vsched_;
    const std::size_t PV = static_cast<std::size_t>(S) * V;
    ifv_.resize(PV);
    ibv_.resize(PV);
    for (int s = 0; s < S; ++s) {
        const StageTimes& mid = itab_[s]->t[layers_[s] / V];
        for (int c = 0; c < V; ++c) {
            ifv_[static_cast<std::size_t>(c) * S + s] = mid.forward_s;
            ibv_[static_cast<std::size_t>(c) * S + s] = mid.backward_s;
        }
    }
    const CfgStage& first = cfg_[0];
    const StageTimes& tf = costs_->times(first.g, first.size, first.tp, kFirst, layers_[0] / V);
    ifv_[0] = tf.forward_s;
    ibv_[0] = tf.backward_s;
    const CfgStage& last = cfg_[S - 1];
    const StageTimes& tl = costs_->times(last.g, last.size, last.tp, kLast, layers_[S - 1] / V);
    ifv_[PV - 1] = tl.forward_s;
    ibv_[PV - 1] = tl.backward_s;
    // every path of family C ends at stage 0's last pass: its gradient sync, then the slowest step
    double omax = iopt_;
    for (int s = 0; s < S; ++s) omax = std::max(omax, ilv_stage_times(s, layers_[s]).optimizer_s);
    ifc_omax_ = omax;
    ifc_tail_ = ilv_sync(0, layers_[0]) + omax;
}

// Family C of the interleaved DAG (interleaved_family_c, search_bounds.cpp) on those times, the
// sends between neighbouring stages the 1F1B plan's links.
double Walker::ilv_family_c() {
    return interleaved_family_c(ifv_, ibv_, sf_, sb_, static_cast<int>(cfg_.size()), vsched_, ctx_->m, iback_) + ifc_tail_;
}

// The interleaved DAG of the split layers_ on the times ilv_chunk_bounds put in ifv_ and ibv_, each at
// most its chunk's, with the 1F1B plan's links between neighbouring stages (0 across the
// wrap-around link), no bucket, each stage's gradient sync as far as it surely follows its last
// pass (ilv_sync) and its optimizer step for its layers: every node at most the plan's, so its longest path is at most the plan's time (finishes are maxima
// and sums, monotone in every duration; blocking sends folded as for the plan). Run with the cut
// as cutoff, it returns at least that when the split cannot enter the top K.
void Walker::ilv_lower_chunks(std::vector<StageTimes>& chunks, bool passes) const {
    const int S = static_cast<int>(cfg_.size()), V = vsched_;
    const std::size_t PV = static_cast<std::size_t>(S) * V;
    chunks.assign(PV, StageTimes{});
    for (std::size_t v = 0; v < PV; ++v) {
        const std::size_t s = v % S;
        StageTimes& t = chunks[v];
        t.forward_s = passes ? ifv_[v] : 0.0;
        t.backward_s = passes ? ibv_[v] : 0.0;
        t.send_forward_s = v + 1 < PV && s + 1 < static_cast<std::size_t>(S) ? sf_[s] : 0.0;
        t.send_backward_s = v > 0 && s > 0 ? sb_[s] : 0.0;
    }
    fold_blocking_sends(sc_.training.stack, chunks);
}

void Walker::ilv_lower_inputs() {
    const int S = static_cast<int>(cfg_.size());
    ilv_lower_chunks(ilb_chunks_, true);
    ilb_stages_.assign(S, StageTimes{});
    for (int s = 0; s < S; ++s) {
        ilb_stages_[s].dp_sync_s = ilv_sync(s, layers_[s]);
        ilb_stages_[s].optimizer_s = std::max(iopt_, ilv_stage_times(s, layers_[s]).optimizer_s);
    }
}

double Walker::ilv_lower_dag() {
    const int S = static_cast<int>(cfg_.size()), V = vsched_;
    const double cut_at = sh_.threshold() * scale_ / (1 - kBoundSlack);
    if (static_cast<std::int64_t>(S) * V * ctx_->m > kTracedPasses) return interleaved_iteration_time_below(ilb_chunks_, ilb_stages_, V, ctx_->m, cut_at);
    // traced, so that a walk that cuts leaves its path (ilv_certified_cut): the one that stopped
    // it, or where it ran to its end, its longest
    Sweep& sw = ilb_sweep_;
    sw.chunks = ilb_chunks_;
    sw.stages = ilb_stages_;
    sw.p = S, sw.V = V, sw.m = ctx_->m, sw.group = 0;
    sw.detailed = false;
    sw.trace = true;
    sw.cutoff = cut_at;
    const double T = sw.run();
    // the kept path that cut longest ago gives way
    if ((sw.stop_stage >= 0 || T >= cut_at) && certificate_of(sw, icerts_.path[static_cast<std::size_t>(icerts_.victim())])) ilv_cert_replaced();
    return T;
}

// Whether ilv_lower_dag cuts the split. Where it seldom does (long walks of many micro-batches
// whose splits are near the threshold), running it doubles the walks for the costing of a few
// splits, so it runs while it cut at least one in three of its recent runs, and every 16th split
// otherwise to notice when that changes. Either way only what it cuts is skipped: the plans found
// are the same.
bool Walker::ilv_lower_cut() {
    if (ilb_gate_.skip(32, 3)) return false;
    ilv_lower_inputs();
    const bool cuts = cut(ilv_lower_dag());
    ilb_gate_.record(cuts, 256);
    return cuts;
}

// A complete interleaved plan, costed and scored as `estimate` does (estimate.cpp): the stages
// with their chunks (evaluate_stages), blocking sends folded into the chunks, the interleaved DAG.
// The kept paths, family C, then the DAG on its chunk times, cut it first without costing it.
// (dp0, omax: the prefix's tail, at most ilv_chunk_bounds' ifc_tail_)
void Walker::ilv_leaf(double dp0, double omax) {
    const int S = static_cast<int>(cfg_.size()), V = vsched_;
    if (!exhaustive_) {
        if (ilv_cert_quick_cut(dp0, omax)) {
            ++stats.pruned;
            return;
        }
        ilv_chunk_bounds();
        if (ilv_certified_cut() || cut(ilv_family_c()) || ilv_lower_cut()) {
            ++stats.pruned;
            return;
        }
    }
    for (int j = 0; j < S; ++j) iplan_.stages[j].num_layers = layers_[j];
    if (iplace_.empty()) iplace_ = place_plan(sc_, iplan_);
    const std::vector<StageEval> ev = evaluate_stages(sc_, iplan_, iplace_, &ilinks_);
    ++stats.cost_probes;
    bool fits = true;
    for (int j = 0; j < S; ++j)
        if (!ev[j].fits) {
            fits = false;
            if (!exhaustive_) {
                inofit_[j] = std::min(inofit_[j], layers_[j]);
                ilv_dead_ = std::min(ilv_dead_, j);
            }
        }
    if (!fits) {
        ++stats.infeasible["memory"];
        return;
    }
    times_.resize(S);
    std::vector<StageTimes> chunks(static_cast<std::size_t>(S) * V);
    for (int s = 0; s < S; ++s) {
        times_[s] = ev[s].times;
        for (int c = 0; c < V; ++c) chunks[static_cast<std::size_t>(c) * S + s] = ev[s].chunk_times[c];
    }
    fold_blocking_sends(sc_.training.stack, chunks);
    const double cutoff = eval_cutoff();
    const double T = interleaved_iteration_time_below(chunks, times_, V, ctx_->m, cutoff);
    ++stats.evaluated;
    if (T < cutoff) insert(T);
    if (static_cast<std::int64_t>(S) * V * ctx_->m > 20000 || (stats.evaluated & 15) == 0) check();
}

}  // namespace poseidon::detail
