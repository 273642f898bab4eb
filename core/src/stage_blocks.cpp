// Which blocks a stage holds (docs/model.md, "Expert parallelism"): a model whose first blocks
// are dense before its MoE blocks (DeepSeek-V3's first_dense_layers) has them on the stage, or
// the model chunk, that holds the first blocks; every other block is costed at the average of the
// blocks after them.
#include <algorithm>

#include "poseidon/cost_model.hpp"

namespace poseidon {

std::vector<int> leading_blocks_per_chunk(const ModelSpec& m, const Plan& plan, LeadingBlocks rule) {
    const int p = static_cast<int>(plan.stages.size()), V = std::max(1, plan.virtual_stages);
    std::vector<int> k(static_cast<std::size_t>(p) * V, 0);
    const int F = leading_dense_blocks(m);
    if (F == 0 || p == 0) return k;
    std::vector<std::vector<int>> blocks(p);
    for (int s = 0; s < p; ++s) blocks[s] = V > 1 ? chunk_blocks(plan.stages[s], V) : std::vector<int>{plan.stages[s].num_layers};
    if (rule != LeadingBlocks::by_layers) {
        // the search's cost cache: the first chunk of the first (or of every) stage holds them
        for (int s = 0; s < (rule == LeadingBlocks::on_every_stage ? p : 1); ++s) k[static_cast<std::size_t>(s)] = std::min(F, blocks[s][0]);
        return k;
    }
    // Megatron-Core's order of model chunks: chunk c of stage s is virtual stage c p + s
    int offset = 0;
    for (int c = 0; c < V; ++c)
        for (int s = 0; s < p; ++s) {
            const int n = blocks[s][c];
            k[static_cast<std::size_t>(c) * p + s] = std::clamp(F - offset, 0, n);
            offset += n;
        }
    return k;
}

double prefix_share_of(int leading, int blocks) { return blocks > 0 ? static_cast<double>(leading) / blocks : 0.0; }

}  // namespace poseidon
