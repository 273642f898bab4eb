// Selective recomputation of named modules (core/src/recompute_modules.cpp; docs/model.md,
// "Recomputing named modules"), and the roofline GEMM timer replica_cost shares with it.
#pragma once

#include <algorithm>

#include "poseidon/expert_parallel.hpp"
#include "poseidon/gemm_shape.hpp"

namespace poseidon {

// One replica's GEMMs on the roofline (docs/model.md, "Compute"): max(FLOPs at the matrix rate,
// operands and result at the memory rate) plus one kernel's fixed cost. The linear layers run at
// a low-precision recipe's rate on quantised operands with a bf16 result.
struct GemmTimer {
    double flops_rate = 0, lp_rate = 0, mem_rate = 0, kernel_s = 0;
    double element_bytes = 2, operand_bytes = 2;
    bool lp = false;
    // bytes per element of a weight gradient its GEMM writes: 8 where it accumulates into the
    // fp32 main_grad (read and write, --gradient-accumulation-fusion), else the element size
    double wgrad_bytes = 2;
    // the roofline of a GEMM, before its result's write
    double gemm_core_s(double batch, double M, double N, double K) const {
        const double flops = 2 * batch * M * N * K, bytes = batch * (M * K + K * N + M * N) * element_bytes;
        return std::max(flops / (flops_rate * gemm_alignment_factor(N, K, element_bytes)), bytes / mem_rate) + kernel_s;
    }
    double linear_core_s(double M, double N, double K) const {
        if (!lp) return gemm_core_s(1, M, N, K);
        const double bytes = (M * K + K * N) * operand_bytes + M * N * element_bytes;
        return std::max(2 * M * N * K / (lp_rate * gemm_alignment_factor(N, K, operand_bytes)), bytes / mem_rate) + kernel_s;
    }
    // a result of `elements` written after each tile's reduction, not hidden behind it
    double out_s(double elements, double bytes) const { return elements * bytes / mem_rate; }
    double gemm_s(double batch, double M, double N, double K) const { return gemm_core_s(batch, M, N, K) + out_s(batch * M * N, element_bytes); }
    double linear_s(double M, double N, double K) const { return linear_core_s(M, N, K) + out_s(M * N, element_bytes); }
    // the backward of a forward GEMM M x N x K (M tokens): dgrad writes M x K, wgrad N x K
    double linear_bwd_s(double M, double N, double K) const {
        return 2 * linear_core_s(M, N, K) + out_s(M * K, element_bytes) + out_s(N * K, wgrad_bytes);
    }
    double gemm_bwd_s(double batch, double M, double N, double K) const {
        return 2 * gemm_core_s(batch, M, N, K) + out_s(batch * M * K, element_bytes) + out_s(batch * N * K, element_bytes);
    }
    // the two halves of a bf16 weight GEMM's backward (the LM head's, whatever the recipe)
    double gemm_dgrad_s(double M, double N, double K) const { return gemm_core_s(1, M, N, K) + out_s(M * K, element_bytes); }
    double gemm_wgrad_s(double M, double N, double K) const { return gemm_core_s(1, M, N, K) + out_s(N * K, wgrad_bytes); }
};
// The forward pieces of one average block as replica_cost timed them, which a module's
// recomputation runs again.
struct BlockForward {
    double tokens = 0, replicated_tokens = 0, tp = 1;  // T, the tokens of the replicated ops, t
    double core_s = 0;       // attention core
    double moe_s = 0;        // the routed experts' section (share-weighted)
    double ep_s = 0;         // its token exchanges
    double tp_s = 0;         // the block's TP collectives
    MoeShape moe;            // the MoE layer on this GPU
};
struct RecomputeCost {
    double compute_s = 0, tp_s = 0, ep_s = 0;
};
// Selective recomputation of named modules (recompute_modules.cpp; docs/model.md, "Recomputing
// named modules"): the backward's extra forward work per block, and the activation bytes per
// block and micro-batch the modules do not keep.
RecomputeCost module_recompute_cost(const Scenario& sc, const BlockAverage& avg, const GemmTimer& g, const BlockForward& f);
struct RecomputeSaving {
    double per_token_bytes = 0;   // per token of the replica's micro-batch (attention, norms, dense MLP)
    double moe_block_bytes = 0;   // per MoE block's micro-batch, of moe_memory's saved bytes
};
RecomputeSaving module_recompute_saving(const Scenario& sc, const BlockAverage& avg, const MoeShape& moe, double tp, bool sequence_parallel, double quant_operand_bytes);

}  // namespace poseidon
