// Megatron-FSDP's per-block communication (docs/model.md, "FSDP"): every pass of a stage
// all-gathers each block's parameters on the communication stream one block ahead of the compute
// (prefetch), and the backward also reduce-scatters each block's gradients after it. Both are a
// chain of sub-steps over two streams, whose longest path for L equal blocks is closed:
//   forward   ag + (L - 1) max(c_f + kappa min(c_f, ag), ag) + c_f
//   backward  ag + (L - 1) max(c_b + kappa min(c_b, ag + rs), ag + rs) + c_b + rs
// (the first gather and the last reduce-scatter are exposed; compute beside a collective runs at
// the device's comm_compute_slowdown kappa, as for the gradient buckets of "Overlap").
#include "poseidon/cost_model.hpp"

#include <algorithm>

namespace poseidon {

FsdpExtra fsdp_extra(double layer_forward_s, double layer_backward_s, int layers, double gather_s, double reduce_scatter_s, double kappa) {
    if (layers <= 0) return {};
    const double L = layers;
    auto step = [&](double compute, double comm) { return std::max(compute + kappa * std::min(compute, comm), comm); };
    const double fwd = gather_s + (L - 1) * step(layer_forward_s, gather_s) + layer_forward_s;
    const double comm_b = gather_s + reduce_scatter_s;
    const double bwd = gather_s + (L - 1) * step(layer_backward_s, comm_b) + layer_backward_s + reduce_scatter_s;
    return {fwd - L * layer_forward_s, bwd - L * layer_backward_s};
}

}  // namespace poseidon
