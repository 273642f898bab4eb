// Megatron-FSDP's per-block gathers and reduce-scatters (core/src/fsdp.cpp).
#pragma once

#include "poseidon/types.hpp"

namespace poseidon {

// Megatron-FSDP (core/src/fsdp.cpp): what the per-block parameter all-gathers (gather_s each)
// and gradient reduce-scatters (reduce_scatter_s each) add to one forward and one backward of
// `layers` blocks of the given compute times, prefetched one block ahead on the communication stream.
struct FsdpExtra {
    double forward_s = 0, backward_s = 0;
};
FsdpExtra fsdp_extra(double layer_forward_s, double layer_backward_s, int layers, double gather_s, double reduce_scatter_s, double kappa);

}  // namespace poseidon
