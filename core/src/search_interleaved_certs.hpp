// The paths that cut the last walks of the interleaved lower DAG (interleaved_certificate.hpp),
// kept as bounds of later splits of the same (p, V, m) (Walker::ilv_certified_cut; docs/search.md,
// "Paths that cut before"). Internal to core/src.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "interleaved_certificate.hpp"
#include "poseidon/dag.hpp"

namespace poseidon::detail {

// A check that runs while it cut at least one in `ratio` of its recent runs (once it ran `warm`
// times; the counts halve every `window` runs) and at every 16th call otherwise, to notice when
// that changes: where a check seldom cuts it costs more than the walk it saves. Only what the
// check cuts is skipped, so the plans are the same whether it runs or not.
struct SeldomGate {
    int runs = 0, cuts = 0, skipped = 0;
    bool skip(int warm, int ratio) { return runs >= warm && ratio * cuts < runs && (++skipped & 15) != 0; }
    void record(bool cut, int window) {
        ++runs;
        cuts += cut;
        if (runs == window) runs /= 2, cuts /= 2;
    }
};

struct IlvCerts {
    static constexpr int kSlots = 32;
    std::array<PathCertificate, kSlots> path;
    // the slots from the path that cut (or came) last to the one that cut longest ago: checks go
    // in this order, and a new path takes the last slot (Walker::ilv_cert_replaced). With the
    // first and last chunks' extras in the sums, four slots (oldest out) left 2 x 1024 x 128 of
    // the MoE sweep three times the work of 32 (docs/performance.md, "More kept paths").
    std::array<int, kSlots> order = [] {
        std::array<int, kSlots> o{};
        for (int i = 0; i < kSlots; ++i) o[static_cast<std::size_t>(i)] = i;
        return o;
    }();
    int victim() const { return order[kSlots - 1]; }
    // slot `at` of the order (which holds path i) to the front
    void touch(int at) {
        const int i = order[static_cast<std::size_t>(at)];
        for (int j = at; j > 0; --j) order[static_cast<std::size_t>(j)] = order[static_cast<std::size_t>(j - 1)];
        order[0] = i;
    }
    // each path's sends on the configuration's links (sends_epoch: the configuration they are of)
    std::array<double, kSlots> sends{};
    std::array<std::uint64_t, kSlots> sends_epoch{};
    std::uint64_t links_epoch = 0;
    std::vector<StageTimes> links;  // the configuration's chunks with sends only
    // Per path, its passes per stage (nf, nb: the counts of the stage's chunks) and their length
    // over the stages fixed so far at middle-chunk times plus Walker::ilv_cert_extra (pre[k]:
    // stages 0..k-1, for the split walked now up to pre[valid - 1]): at a complete split, with the
    // tail, a lower bound of what ilv_certified_cut computes, in O(1) instead of O(p V).
    struct Sums {
        std::uint64_t gen = 0;  // the path's generation nf and nb are of
        std::vector<double> nf, nb, pre;
        // its passes on the first chunk of stage 0 and the last of stage p - 1 ([0], [1]), which
        // hold the embedding and the LM head (Walker::ilv_cert_extra)
        std::array<double, 2> end_f{}, end_b{};
        int sync = 0;  // the stage whose sync the path ends with (PathCertificate::sync_stage)
        int valid = 1;
        // h[j * (U + 1) + R]: at most the least over splits of stages j.. holding R chunks (within
        // their caps) of the path's passes on them at middle-chunk times and extras; of the
        // configuration and V counted h_epoch, the path's generation h_gen (ilv_cert_suffix_cut)
        std::vector<double> h;
        std::uint64_t h_epoch = 0, h_gen = 0;
    };
    // scratch of the suffix tables: the path's passes per stage and chunk size, fill_suffixes' input
    std::vector<double> g;
    std::vector<const double*> tables;
    std::vector<int> caps;
    // the suffix check runs while it cuts one node in eight (Walker::ilv_cert_suffix_cut); past
    // the first kFirst paths of the order, while those cut one node in eight of what they see
    static constexpr int kFirst = 4;
    SeldomGate sfx, deep;
    std::array<std::uint64_t, kSlots> gen{};  // bumped when a slot takes a new path
    std::array<Sums, kSlots> sums;
    // stage k took a new layer count: the sums through it are stale
    void changed(int k) {
        for (Sums& s : sums) s.valid = std::min(s.valid, k + 1);
    }
};

}  // namespace poseidon::detail
