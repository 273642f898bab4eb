// Which blocks a stage holds (docs/model.md, "Expert parallelism"): a model whose first blocks
// are dense before its MoE blocks (DeepSeek-V3's first_dense_layers) has them on the stage, or
// the model chunk, that holds the first blocks; every other block is costed at the average of the
// blocks after them.
#include <algorithm>
#include <cmath>

#include "poseidon/cost_model.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/model_size.hpp"

namespace poseidon {

namespace {

// Each model chunk's first block and block count, by virtual stage c p + s: Megatron-Core's order
// of model chunks, chunk c of stage s after chunk c of stage s - 1, chunk c + 1 of stage 0 after
// chunk c of the last stage.
std::vector<std::pair<int, int>> chunk_block_ranges(const Plan& plan) {
    const int p = static_cast<int>(plan.stages.size()), V = std::max(1, plan.virtual_stages);
    std::vector<std::vector<int>> blocks(p);
    for (int s = 0; s < p; ++s) blocks[s] = V > 1 ? chunk_blocks(plan.stages[s], V) : std::vector<int>{plan.stages[s].num_layers};
    std::vector<std::pair<int, int>> r(static_cast<std::size_t>(p) * V);
    int offset = 0;
    for (int c = 0; c < V; ++c)
        for (int s = 0; s < p; ++s) {
            const int n = blocks[s][static_cast<std::size_t>(c)];
            r[static_cast<std::size_t>(c) * p + s] = {offset, n};
            offset += n;
        }
    return r;
}

}  // namespace

std::vector<int> leading_blocks_per_chunk(const ModelSpec& m, const Plan& plan, LeadingBlocks rule) {
    const int p = static_cast<int>(plan.stages.size()), V = std::max(1, plan.virtual_stages);
    std::vector<int> k(static_cast<std::size_t>(p) * V, 0);
    const int F = leading_dense_blocks(m);
    if (F == 0 || p == 0) return k;
    const std::vector<std::pair<int, int>> r = chunk_block_ranges(plan);
    // the search's cost cache: the first chunk of the first (or of every) stage holds them
    if (rule != LeadingBlocks::by_layers)
        for (int s = 0; s < (rule == LeadingBlocks::on_every_stage ? p : 1); ++s) k[static_cast<std::size_t>(s)] = std::min(F, r[static_cast<std::size_t>(s)].second);
    else
        for (std::size_t i = 0; i < r.size(); ++i) k[i] = std::clamp(F - r[i].first, 0, r[i].second);
    return k;
}

double prefix_share_of(int leading, int blocks) { return blocks > 0 ? static_cast<double>(leading) / blocks : 0.0; }

std::string block_mix_note(const ModelSpec& m, const Plan& plan) {
    const int L = m.num_layers, F = leading_dense_blocks(m), body = L - F;
    const int p = static_cast<int>(plan.stages.size()), V = std::max(1, plan.virtual_stages);
    if (body <= 0 || p == 0) return "";
    int moe = 0, win = 0;
    for (int i = F; i < L; ++i) moe += moe_block(m, i), win += windowed(m, i);
    const bool moe_varies = moe > 0 && moe < body, win_varies = win > 0 && win < body;
    if (!moe_varies && !win_varies) return "";
    std::vector<std::string> off;
    const std::vector<std::pair<int, int>> r = chunk_block_ranges(plan);
    for (std::size_t v = 0; v < r.size(); ++v) {
        const int s = static_cast<int>(v) % p, c = static_cast<int>(v) / p;
        const int a = std::max(r[v].first, F), b = std::min(r[v].first + r[v].second, L);
        if (b <= a) continue;
        int own_moe = 0, own_win = 0;
        for (int i = a; i < b; ++i) own_moe += moe_block(m, i), own_win += windowed(m, i);
        const double avg_moe = static_cast<double>(b - a) * moe / body, avg_win = static_cast<double>(b - a) * win / body;
        std::string what;
        if (moe_varies && std::abs(own_moe - avg_moe) >= 1.0 / 3) what = std::to_string(own_moe) + " MoE, costed as " + fixed_text(avg_moe, 2);
        if (win_varies && std::abs(own_win - avg_win) >= 1.0 / 3)
            what += (what.empty() ? "" : "; ") + std::to_string(own_win) + " windowed, costed as " + fixed_text(avg_win, 2);
        if (what.empty()) continue;
        off.push_back("stage " + std::to_string(s) + (V > 1 ? " chunk " + std::to_string(c) : "") + (b - a == 1 ? " (block " + std::to_string(a) : " (blocks " + std::to_string(a) + "-" + std::to_string(b - 1)) +
                      ": " + what + ")");
    }
    if (off.empty()) return "";
    std::string list;
    for (std::size_t i = 0; i < off.size() && i < 4; ++i) list += (i ? ", " : "") + off[i];
    if (off.size() > 4) list += ", and " + std::to_string(off.size() - 4) + " more";
    const std::string kinds = moe_varies && win_varies ? "MoE and dense, windowed and full attention" : moe_varies ? "MoE and dense" : "windowed and full attention";
    return "the model's blocks" + std::string(F > 0 ? " after its leading dense ones" : "") + " are not all alike (" + kinds +
           "): each stage is costed with their average for its blocks, so these, whose own blocks differ from that average, are approximate by up to a block's "
           "difference in time and memory: " + list;
}

std::vector<std::string> dense_stage_grid_notes(const ModelSpec& m, const Plan& plan) {
    std::vector<std::string> out;
    const int F = leading_dense_blocks(m), p = static_cast<int>(plan.stages.size()), V = std::max(1, plan.virtual_stages);
    if (!m.is_moe() || F == 0 || p == 0) return out;
    const std::vector<std::pair<int, int>> r = chunk_block_ranges(plan);
    for (int s = 0; s < p; ++s) {
        const StagePlan& st = plan.stages[s];
        if (st.ep * st.etp <= 1) continue;
        int lo = F, last = -1;
        bool dense = true;
        for (int c = 0; c < V && dense; ++c) {
            const auto [first, n] = r[static_cast<std::size_t>(c) * p + s];
            if (n > 0) dense = first + n <= F, lo = std::min(lo, first), last = std::max(last, first + n - 1);
        }
        if (!dense || last < 0) continue;
        out.push_back("plan.stages[" + std::to_string(s) + "]: ep " + std::to_string(st.ep) + (st.etp > 1 ? " x etp " + std::to_string(st.etp) : "") +
                      " changes nothing there: the stage holds only the model's leading dense blocks (" +
                      (last == lo ? "block " + std::to_string(lo) : "blocks " + std::to_string(lo) + "-" + std::to_string(last)) + "), so no experts");
    }
    return out;
}

}  // namespace poseidon
