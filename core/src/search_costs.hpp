// Evaluation, part 1: the per-micro-batch-size cost cache of the search (docs/search.md,
// "Scoring: one model"). Every stage number the search uses comes from evaluate_stages, called on
// small probe plans; a stage's times depend only on its group, TP, DP, samples, layers, node span
// and position class, its memory fit also on its in-flight micro-batches, and sends only on the
// two neighbouring placements. Internal to core/src.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "poseidon/cost_model.hpp"
#include "poseidon/types.hpp"

namespace poseidon::detail {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// Position class of a stage: what of its cost depends on where it sits in the pipeline.
enum Pos : int { kMiddle = 0, kFirst = 1, kLast = 2, kOnly = 3 };
inline Pos pos_of(int i, int S) {
    if (S == 1) return kOnly;
    if (i == 0) return kFirst;
    if (i == S - 1) return kLast;
    return kMiddle;
}

inline std::uint64_t stage_key(int g, int size, int tp, int pos, int inflight = 0) {
    return (static_cast<std::uint64_t>(g) << 56) | (static_cast<std::uint64_t>(size) << 32) | (static_cast<std::uint64_t>(tp) << 18) |
           (static_cast<std::uint64_t>(pos) << 16) | static_cast<std::uint64_t>(inflight);
}

// Per-layer lower-bound rates of a (group, stage size, TP) at one micro-batch size, exact minima
// over every layer count l of the cached middle-stage costs (docs/search.md, "Bounds").
struct Rates {
    double a = 0;        // min_l (forward + backward)(l) / l
    double phi_f = 0;    // min_l forward(l) / l
    double phi_b = 0;    // min_l backward(l) / l
    double mu_b = 0;     // min_l (m (forward + backward)(l) + dp_sync(l)) / l
    double dp_min = 0;   // min_l dp_sync(l)
    double opt_min = 0;  // min_l optimizer(l)
};
// Family C's steady-state seconds per layer of a stage with w warm-up forwards among m
// micro-batches: its m - w - 1 steady forwards and m - 1 backwards (docs/search.md, "Joint
// family-C bound"), at the rates' per-layer minima.
inline double family_c_e(double m, double w, const Rates& r) { return std::max(0.0, m - w - 1) * r.phi_f + (m - 1) * r.phi_b; }

// Middle-stage costs of one (group, stage size, TP) for every layer count, built once per
// micro-batch size and then only read (shared by the walkers of a parallel search).
struct Table {
    // by layer count: bounds of a stage anywhere in the pipeline. For a model with leading dense
    // blocks each time is the lesser of a stage of the blocks after them (a middle stage's, in
    // `body`) and of a stage that begins with them, which the first stage holds (docs/search.md,
    // "Bounds": A1, every stage costs at least a middle stage of as many layers); otherwise the
    // middle stage's (`body` null).
    std::vector<StageTimes> t;
    std::vector<double> c;      // forward + backward by layer count
    Rates rates;
    bool monotone = false;  // c never decreases with the layer count
    std::shared_ptr<const Table> body;
    // The table of stage j of a pipeline: after the first stage, which holds the leading dense
    // blocks, every stage's own.
    const Table& of_stage(int j) const { return j > 0 && body ? *body : *this; }
};
inline std::size_t table_bytes(int L) { return static_cast<std::size_t>(L + 1) * (sizeof(StageTimes) + sizeof(double)); }

// What a first, last or only stage computes per micro-batch beyond a middle stage of as many
// layers: the embedding, the final norm, LM head and loss (docs/search.md, "Bounds": the suffix
// bounds add it to the stage that does it).
struct PosExtra {
    double forward_s = 0, backward_s = 0;
};

struct FitMemo {
    int fit_max = 0;    // every l <= fit_max fits (-1: not even 0 is known to)
    int nofit_min = 0;  // no l >= nofit_min fits
};

struct ProbeStage {
    int g = 0, size = 1, tp = 1, layers = 1, first_gpu = 0;
};

// The per-micro-batch-size cost cache over evaluate_stages. The middle tables are filled by the
// cache that builds the micro-batch size's context; a copy (one per walker of a parallel search)
// shares them read-only and keeps its own first/last-stage times, fit memos and links, so that
// no lock is needed. Everything else grows with the probes made, and is counted in `bytes()`
// and in `*account` (the search's memory cap).
class Costs {
public:
    // empty_stages (options.empty_stages): stages may hold no layer, so layer count 0 is costed
    // (the middle tables' entry 0, and the rates' dp/optimizer minima over it) and its memory fit
    // is probed rather than assumed.
    Costs(const Scenario& sc, std::int64_t mbs, std::int64_t m, std::atomic<std::int64_t>* account = nullptr, bool empty_stages = false);
    Costs(const Costs& base);  // shares base's middle tables; copies the rest
    Costs& operator=(const Costs&) = delete;
    ~Costs();

    std::int64_t m() const { return m_; }
    std::int64_t probes() const { return probes_; }
    int l_min() const { return l_min_; }  // fewest layers a stage may hold
    std::int64_t bytes() const { return bytes_; }

    // evaluate_stages on a plan of these stages (homogeneous, one replica set each); a probe is
    // no pipeline, so its first and last stage exchange no tied-embedding gradient unless
    // whole_pipeline.
    // The model's leading dense blocks on the probe's first stage (LeadingBlocks::on_first_stage),
    // or on every stage for the middle tables' bounds.
    const std::vector<StageEval>& probe(const std::vector<ProbeStage>& ps, bool whole_pipeline = false,
                                        LeadingBlocks rule = LeadingBlocks::on_first_stage);
    // The same probe's fit and headroom alone (stage_fits_into): a memory cap's search reads
    // nothing else, and the times and links were most of a probe.
    // only: as stage_fits_into's (the stages whose fit is read).
    const std::vector<StageFit>& probe_fits(const std::vector<ProbeStage>& ps, const std::vector<std::uint8_t>* only = nullptr);
    // Middle-position costs for every layer count, and the rates derived from them.
    const Table& middle(int g, int size, int tp);
    // Stage times at a position; first/last/only stages are probed on first use.
    const StageTimes& times(int g, int size, int tp, Pos pos, int l);
    // The least extra work of a stage at `pos` over every layer count (zero for a middle stage).
    const PosExtra& pos_extra(int g, int size, int tp, Pos pos);
    void store_times(int g, int size, int tp, Pos pos, int l, const StageTimes& times);
    // Whether a stage of `size` GPUs of group g whose first GPU is `first` has the links of one at
    // the group's first GPU, where the probes of the tables place it: always where the group's
    // NVLink domain is its node (stage sizes and offsets are whole nodes or parts of one); with
    // larger domains (an NVL72 rack) when it spans as many domains, as full (docs/search.md,
    // "Scoring: one model", placement).
    bool placed_as_probed(int g, int size, int first) const;

    FitMemo& memo(int g, int size, int tp, Pos pos, int inflight) {
        auto [it, fresh] = fits_.try_emplace(stage_key(g, size, tp, pos, inflight));
        if (fresh) {
            it->second = FitMemo{l_min_ - 1, L_ + 1};
            grow(kFitBytes);
        }
        return it->second;
    }
    // 1: fits, 0: does not, -1: not known yet.
    int fits_known(int g, int size, int tp, Pos pos, int inflight, int l) {
        const FitMemo& f = memo(g, size, tp, pos, inflight);
        if (l <= f.fit_max) return 1;
        if (l >= f.nofit_min) return 0;
        return -1;
    }
    void record_fit(int g, int size, int tp, Pos pos, int inflight, int l, bool fits) {
        FitMemo& f = memo(g, size, tp, pos, inflight);
        if (fits)
            f.fit_max = std::max(f.fit_max, l);
        else
            f.nofit_min = std::min(f.nofit_min, l);
    }
    // Largest layer count that may fit (exact once exact_cap ran).
    int cap_upper(int g, int size, int tp, Pos pos, int inflight) { return memo(g, size, tp, pos, inflight).nofit_min - 1; }
    // The cap found with single-stage probes that reproduce the position and in-flight count,
    // each placed where the line through the last two probes' headroom crosses zero.
    int exact_cap(int g, int size, int tp, Pos pos, int inflight);
    // An upper bound on the layers a stage of this kind can hold at any position of any pipeline.
    int cap_anywhere(int g, int size, int tp);
    // (send_forward of a, send_backward of b) between two neighbouring stages.
    std::pair<double, double> link(const ProbeStage& a, const ProbeStage& b, bool same_node);
    // The tied-embedding gradient all-reduce between a pipeline's first and last stage (0 when
    // the embeddings are not tied); it joins both stages' dp_sync_s.
    double embedding_sync(const ProbeStage& first, const ProbeStage& last, bool same_node);

    // Approximate heap bytes of one entry of each kind (node-based maps).
    static constexpr std::int64_t kTimesBytes = sizeof(StageTimes) + 48, kFitBytes = 48, kLinkBytes = 96;

private:
    using Tables = std::unordered_map<std::uint64_t, Table>;
    const Scenario& sc_;
    std::int64_t mbs_, m_;
    int L_;
    int l_min_ = 1;
    std::int64_t probes_ = 0, bytes_ = 0;
    std::atomic<std::int64_t>* account_;
    std::shared_ptr<Tables> middle_;  // written only by the cache that created it
    bool owner_ = true;
    Tables own_;  // a copy's middle tables that its base did not have (not expected)
    // A probe's plan, placement, results and links, kept for their storage: one set per probe
    // size, since the tables' probes of a hundred stages alternate with probes of one to three,
    // and allocating the stages' vectors again was a quarter of a small search's time.
    struct ProbeBuffers {
        Plan plan;
        std::vector<StagePlacement> placement;
        std::vector<StageEval> out;
        std::vector<StageFit> fits;
        PlacementLinks links;
    };
    ProbeBuffers& probe_plan(const std::vector<ProbeStage>& ps);  // the buffers of ps's size, set to ps
    std::unordered_map<std::size_t, ProbeBuffers> buffers_;
    static constexpr std::size_t kProbeSizesKept = 64;
    std::vector<ProbeStage> scratch_;
    std::vector<std::uint8_t> only_;  // exact_cap's probes: the target stage alone
    std::unordered_map<std::uint64_t, StageTimes> pos_;  // first/last/only stages, key with l
    std::unordered_map<std::uint64_t, FitMemo> fits_;
    std::unordered_map<std::uint64_t, PosExtra> extra_;
    // key: both ends (group, size, TP, first GPU where the group's NVLink domain is larger than its
    // node, else -1), then same node (0, 1), or 2 + that for embedding_sync
    std::map<std::array<int, 9>, std::pair<double, double>> links_;
    // link's last answer: a configuration asks for the links between the stages of a block in a
    // row, each the same key (the map's lookup was 2 % of the four-type MoE shapes)
    std::array<int, 9> last_link_key_{-1};
    std::pair<double, double> last_link_{0, 0};

    void grow(std::int64_t b) {
        bytes_ += b;
        if (account_) account_->fetch_add(b, std::memory_order_relaxed);
    }
    Table& build_middle(Table& tb, int g, int size, int tp);
    void finish_table(Table& tb) const;  // c, monotone and rates from t
};

}  // namespace poseidon::detail
