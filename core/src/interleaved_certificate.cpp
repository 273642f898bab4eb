// The path that stopped a walk of the interleaved DAG (interleaved_certificate.hpp). A walk stops
// when a stage's clock (its longest path so far), its passes left and what surely follows its last
// pass reach the cutoff (interleaved_sweep.hpp, early stop): that sum is the length of one path of
// the DAG, which this file writes down as counts, so that the next split's chunk times give its
// length in O(PV) where a walk takes O(PV m). A walk that runs to its end at or above the cutoff
// leaves its longest path too, which ends with the sync of the stage that sets the barrier (a
// stage's own sync is no part of the early stop's bound, so such walks do not stop).
#include "interleaved_certificate.hpp"

#include <algorithm>

namespace poseidon::detail {

double PathCertificate::length(std::span<const StageTimes> chunks, std::span<const StageTimes> stages) const {
    const std::size_t PV = chunks.size();
    double sum = 0;
    for (std::size_t v = 0; v < PV; ++v) {
        const StageTimes& t = chunks[v];
        sum += count[v] * t.forward_s + count[PV + v] * t.backward_s + count[2 * PV + v] * t.send_forward_s + count[3 * PV + v] * t.send_backward_s;
    }
    double opt = 0;
    for (const StageTimes& st : stages) opt = std::max(opt, st.optimizer_s);
    return sum + stages[static_cast<std::size_t>(sync_stage)].dp_sync_s + opt;
}

double PathCertificate::sends(std::span<const StageTimes> chunks) const {
    const std::size_t PV = chunks.size();
    double sum = 0;
    for (std::size_t v = 0; v < PV; ++v) sum += count[2 * PV + v] * chunks[v].send_forward_s + count[3 * PV + v] * chunks[v].send_backward_s;
    return sum;
}

double PathCertificate::passes(std::span<const double> f, std::span<const double> b) const {
    const std::size_t PV = f.size();
    double sum = 0;
    for (std::size_t v = 0; v < PV; ++v) sum += count[v] * f[v] + count[PV + v] * b[v];
    return sum;
}

bool certificate_of(const Sweep& sw, PathCertificate& out) {
    const int p = sw.p, V = sw.V;
    const std::int64_t m = sw.m, PV = static_cast<std::int64_t>(p) * V, PVm = PV * m;
    if (!sw.trace || sw.merged || (sw.stop_stage < 0 && !sw.ran_to_end)) return false;
    out.p = p, out.V = V, out.m = m;
    out.count.assign(static_cast<std::size_t>(4 * PV), 0.0);
    auto add = [&](int kind, std::int64_t v, double n) { out.count[static_cast<std::size_t>(kind * PV + v)] += n; };
    if (sw.stop_stage < 0) {
        // the stage whose sync sets the barrier: its last pass, then dp_sync_s (a stream's buckets
        // would end it instead; the search's lower DAG has none)
        for (int k = 0; k < p; ++k)
            if (sw.has_stream[static_cast<std::size_t>(k)]) return false;
        int last = 0;
        for (int k = 1; k < p; ++k)
            if (sw.last_end[k] + sw.stages[k].dp_sync_s > sw.last_end[last] + sw.stages[last].dp_sync_s) last = k;
        for (std::int32_t id = sw.clock_id[last]; id >= 0; id = sw.pred[static_cast<std::size_t>(id)]) add(static_cast<int>(id / PVm), (id % PVm) / m, 1);
        out.sync_stage = last;
        return true;
    }
    const int s = sw.stop_stage;
    out.sync_stage = 0;
    const std::vector<ChunkPass>& ord = sw.order(s);
    if (sw.stop_before) {
        // chunk 0's first forward on every stage above s and its send, then all of s's passes
        for (int k = 0; k < s; ++k) add(0, k, 1), add(2, k, 1);
        for (int c = 0; c < V; ++c) add(0, static_cast<std::int64_t>(c) * p + s, static_cast<double>(m)), add(1, static_cast<std::int64_t>(c) * p + s, static_cast<double>(m));
    } else {
        for (std::int32_t id = sw.clock_id[s]; id >= 0; id = sw.pred[static_cast<std::size_t>(id)]) add(static_cast<int>(id / PVm), (id % PVm) / m, 1);
        for (std::size_t i = sw.pos[s]; i < ord.size(); ++i) add(ord[i].forward ? 0 : 1, static_cast<std::int64_t>(ord[i].chunk) * p + s, 1);
    }
    // after[s]: chunk 0's backward of the last micro-batch on every stage below s, each after its send
    for (int k = 1; k <= s; ++k) add(3, k, 1), add(1, k - 1, 1);
    return true;
}

}  // namespace poseidon::detail
