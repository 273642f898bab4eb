// Expert parallelism (core/src/expert_parallel.cpp; docs/model.md, "Expert parallelism"): the
// links, the shape, cost and memory of one MoE block's routed experts on a GPU of the expert grid,
// and the expert gradients' reduction.
#pragma once

#include "poseidon/cost_model.hpp"

namespace poseidon {

// Expert parallelism (core/src/expert_parallel.cpp): the links of an expert-parallel group of
// ep x etp consecutive GPUs of group g (Megatron-Core's etp-ep-edp order over a stage's replicas
// of tp x cp GPUs), and the expert data-parallel ring of the stage's edp ranks.
using EpLink = StagePosition::EpLinkRef;
EpLink ep_link(const Group& g, int ep, int etp);
struct RingLink {
    double bw_GBps = 0, latency_s = 0;
};
RingLink edp_ring(const Group& g, const StagePlan& stage);
// One MoE block's routed experts on one GPU of the expert grid (docs/model.md, "Expert
// parallelism"): router-side permutation, token dispatch and combine, grouped GEMMs of the local
// experts, their activation; and what the forward saves for the backward.
struct MoeShape {
    double tokens = 0;              // tokens this GPU holds entering the block's MoE layer
    double hidden = 0, expert_ffn = 0, top_k = 0, experts = 0;
    bool gated = true;
    int ep = 1, etp = 1;
    double imbalance = 1;
    bool fused_permute = false;     // the flex dispatcher
};
struct MoeRates {
    double expert_flops_per_s = 0;  // the routed experts' GEMM rate (the recipe's, under low precision)
    double mem_Bps = 0;
    double kernel_s = 0;
    double element_bytes = 2;       // activations
    double operand_bytes = 2;       // GEMM inputs (quantised under low precision)
    double kappa = 0;               // compute slowdown beside a collective
    double wgrad_bytes = 2;         // per weight-gradient element its GEMM writes (GemmTimer)
};
struct MoeCost {
    double forward_s = 0, backward_s = 0;            // GPU compute of the local experts and the permutation
    double comm_forward_s = 0, comm_backward_s = 0;  // dispatch and combine (and the ETP gather)
    double quant_elements_forward = 0, quant_elements_backward = 0;  // inputs the recipe quantises
    int kernels_forward = 0;
};
MoeCost moe_cost(const MoeShape& x, const MoeRates& r, const EpLink& link);
// The host's time to issue a dropless MoE layer's expert section in the forward, which waits for
// the token counts (stack.moe_sync_host_us + moe_sync_host_us_per_expert x local experts).
double moe_sync_host_s(const MoeShape& x, const Stack& st);
// --moe-shared-expert-overlap: a MoE block's shared experts on the compute stream beside its
// token exchange, fc1 beside the dispatch and fc2 beside the combine (halves of comm_s): the
// exchange time they hide.
double shared_expert_hidden_s(double fc1_s, double fc2_s, double comm_s);
struct MoeMemory {
    double saved_bytes = 0;         // held for the backward, per micro-batch and MoE block
    double buffer_bytes = 0;        // dispatch and receive buffers while the layer runs
};
MoeMemory moe_memory(const MoeShape& x, double element_bytes, double operand_bytes);
// The shape of the scenario's MoE layer on a GPU holding tokens_per_gpu tokens at position pos
// (experts 0 for a dense model).
MoeShape moe_shape(const Scenario& sc, double tokens_per_gpu, const StagePosition& pos);
// The stage's expert grid into a replica's position (its group's links).
void set_expert_grid(StagePosition& pos, const Group& g, const StagePlan& stage);
// The expert gradients' reduction over the stage's expert data-parallel ranks (a reduce-scatter
// with the distributed optimizer, an all-reduce without), expert_grad_bytes per GPU.
double expert_sync_s(const Scenario& sc, const Group& g, const StagePlan& stage, double expert_grad_bytes);

}  // namespace poseidon
