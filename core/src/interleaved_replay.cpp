// The interleaved DAG's walk replayed (interleaved_sweep.hpp, Sweep::run): the walk runs each stage
// as far as its inputs allow, down the stages then up, and whether an input is there depends only
// on which passes ran, never on their times. So the order in which the passes run is one for all
// the splits of (p, V, m): found once without times, it is replayed with no test of readiness and
// no turn that finds nothing to run, the same passes in the same order as the walk, each the same
// max and sum, so every finish, the early stop and the path it leaves are bit for bit the walk's
// (tests/unit/interleaved_replay.tests.cpp). The search times one split after another of a
// configuration, so the last order is kept per thread.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "interleaved_sweep.hpp"

namespace poseidon::detail {

namespace {

// Passes per direction beyond which the walk is not replayed: its order holds 12 bytes per pass.
constexpr std::int64_t kReplayedPasses = std::int64_t{1} << 18;

// One pass of the order: virtual stage v = c p + s, micro-batch j, and whether it is a forward
// and the stage's last pass.
struct Step {
    std::int32_t v, j;
    std::int16_t s;
    std::uint8_t forward, last;
};

// The passes in the order the walk runs them (no merged pairs).
const std::vector<Step>& pass_sequence(int p, int V, std::int64_t m, int group, const std::vector<std::vector<ChunkPass>>& orders) {
    struct Kept {
        int p = -1, V = -1, group = -1;
        std::int64_t m = -1;
        std::vector<Step> seq;
    };
    thread_local Kept kept;
    if (kept.p == p && kept.V == V && kept.m == m && kept.group == group) return kept.seq;
    const std::int64_t PV = static_cast<std::int64_t>(p) * V;
    std::vector<char> fdone(static_cast<std::size_t>(PV * m), 0), bdone(static_cast<std::size_t>(PV * m), 0);
    std::vector<std::size_t> pos(static_cast<std::size_t>(p), 0);
    kept.p = -1;
    kept.seq.clear();
    kept.seq.reserve(static_cast<std::size_t>(2 * PV * m));
    int done = 0;
    auto advance = [&](int s) {
        const std::vector<ChunkPass>& ord = orders[static_cast<std::size_t>(s)];
        std::size_t& at = pos[static_cast<std::size_t>(s)];
        bool moved = false;
        while (at < ord.size()) {
            const ChunkPass& u = ord[at];
            const std::int64_t v = static_cast<std::int64_t>(u.chunk) * p + s, j = u.micro_batch;
            if (u.forward) {
                if (v > 0 && !fdone[static_cast<std::size_t>((v - 1) * m + j)]) break;
                fdone[static_cast<std::size_t>(v * m + j)] = 1;
            } else {
                if (v < PV - 1 && !bdone[static_cast<std::size_t>((v + 1) * m + j)]) break;
                bdone[static_cast<std::size_t>(v * m + j)] = 1;
            }
            ++at;
            kept.seq.push_back({static_cast<std::int32_t>(v), static_cast<std::int32_t>(j), static_cast<std::int16_t>(s), static_cast<std::uint8_t>(u.forward),
                                static_cast<std::uint8_t>(at == ord.size())});
            moved = true;
        }
        if (moved && at == ord.size()) ++done;
        return moved;
    };
    for (bool down = true; done < p; down = !down) {
        bool moved = false;
        for (int i = 0; i < p; ++i) moved = advance(down ? i : p - 1 - i) || moved;
        if (!moved) break;  // unreachable: Megatron's order never deadlocks (Sweep::run returns NaN)
    }
    kept.p = p, kept.V = V, kept.m = m, kept.group = group;
    return kept.seq;
}

}  // namespace

bool Sweep::replayed() const {
    if (!replay_allowed || merged || p > 32767 || static_cast<std::int64_t>(p) * V * m > kReplayedPasses) return false;
    for (int s = 0; s < p; ++s)
        if (has_stream[s]) return false;
    return true;
}

// Each pass as Sweep::run's walk runs it (run_pass without a stream, send_forward, send_backward),
// on the arrays held in locals.
double Sweep::run_replayed(bool early, double stop_at) {
    const std::int64_t PV = static_cast<std::int64_t>(p) * V;
    const std::vector<Step>& seq = pass_sequence(p, V, m, group, *orders_);
    if (static_cast<std::int64_t>(seq.size()) != 2 * PV * m) return std::numeric_limits<double>::quiet_NaN();
    double* const clk = clock.data();
    double* const lf = link_f.data();
    double* const lb = link_b.data();
    double* const sfa = sf.data();
    double* const sba = sb.data();
    double* const left = rest.data();
    const double* const aft = after.data();
    std::int32_t* const prd = trace ? pred.data() : nullptr;
    std::int32_t* const cid = trace ? clock_id.data() : nullptr;
    std::int32_t* const lfid = trace ? link_f_id.data() : nullptr;
    std::int32_t* const lbid = trace ? link_b_id.data() : nullptr;
    const StageTimes* const ch = chunks.data();
    const std::int64_t PVm = PV * m;
    double best = 0;
    std::size_t i = 0;
    for (; i < seq.size(); ++i) {
        const Step& x = seq[i];
        const int s = x.s;
        const std::int64_t v = x.v, j = x.j;
        const StageTimes& t = ch[v];
        double start = clk[s];
        std::int32_t from = trace ? cid[s] : -1;
        // the pass's output sent on the stage's link (of kind 2 forward, 3 backward) after the
        // link's last send (send_forward, send_backward)
        auto send = [&](double f, double* link, std::int32_t* link_id, double* arrived, std::vector<double>& kept, std::int64_t kind, double send_s) {
            const std::int64_t at = v * m + j;
            const double sfin = std::max(f, link[s]) + send_s;
            if (trace) {
                const auto id = static_cast<std::int32_t>(kind * PVm + at);
                prd[id] = f >= link[s] ? cid[s] : link_id[s];
                link_id[s] = id;
            }
            link[s] = arrived[at] = sfin;
            if (detailed) kept[at] = sfin;
            best = std::max(best, sfin);
        };
        double f;
        if (x.forward) {
            if (v > 0) {
                const double in = sfa[(v - 1) * m + j];
                if (trace && in > start) from = static_cast<std::int32_t>((2 * PVm) + (v - 1) * m + j);
                start = std::max(start, in);
            }
            f = start + (t.forward_s + t.pair_reserve_s);
            if (detailed) fwd_start[v * m + j] = start, fwd_fin[v * m + j] = f;
            if (trace) prd[cid[s] = static_cast<std::int32_t>(v * m + j)] = from;
            if (v < PV - 1) send(f, lf, lfid, sfa, send_f_fin, 2, t.send_forward_s);
        } else {
            if (v < PV - 1) {
                const double in = sba[(v + 1) * m + j];
                if (trace && in > start) from = static_cast<std::int32_t>(3 * PVm + (v + 1) * m + j);
                start = std::max(start, in);
            }
            f = start + (t.backward_s + t.pair_reserve_s);
            if (detailed) bwd_start[v * m + j] = start, bwd_fin[v * m + j] = f;
            if (trace) prd[cid[s] = static_cast<std::int32_t>(PVm + v * m + j)] = from;
            if (v > 0) send(f, lb, lbid, sba, send_b_fin, 3, t.send_backward_s);
        }
        clk[s] = f;
        best = std::max(best, f);
        if (early) {
            left[s] -= x.forward ? t.forward_s : t.backward_s;
            if (f + left[s] + aft[s] >= stop_at) {
                stop_stage = s;
                break;
            }
        }
        if (x.last) {
            last_end[s] = finish_stage(s);
            best = std::max(best, last_end[s]);
        }
    }
    if (stop_stage < 0) {
        ran_to_end = true;
        return finish_run(best);
    }
    // the stage's passes run, as the walk counts them (the path of the early stop reads them)
    std::size_t ran = 0;
    for (std::size_t k = 0; k <= i; ++k) ran += seq[k].s == stop_stage;
    pos[static_cast<std::size_t>(stop_stage)] = ran;
    return cutoff;
}

}  // namespace poseidon::detail
