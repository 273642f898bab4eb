// The low-precision recipes' rates, operands and weight copies (core/src/low_precision.cpp).
#pragma once

#include "poseidon/types.hpp"

namespace poseidon {

// docs/model.md, "Low precision".
// The dense tensor peak of a low-precision recipe on a device in TFLOP/s; 0 where it has none.
double low_precision_tflops(const Device& d, Precision p);
// What one recipe stores per element of a quantised GEMM operand on a device.
struct QuantRecipe {
    double operand_bytes = 0;       // the quantised value and its share of the scales (0: no quantisation)
    bool columnwise_copy = false;   // the backward needs a second, column-wise (transposed) copy
    bool amax_pass = false;         // the scale needs a pass over the tensor before the cast (current scaling)
    double hadamard_read_bytes = 0; // extra bytes read per element of the column-wise copy (NVFP4's transform)
};
QuantRecipe quant_recipe(const Device& d, Precision p);
// Memory-bound time to quantise `tensors` bf16 tensors of `elements` in all into a recipe's operands.
double quantize_s(const QuantRecipe& q, double elements, int tensors, double mem_rate_Bps, double kernel_s);
// Bytes per linear-layer parameter of the quantised compute copies of the weights (0 in bf16).
double compute_weight_bytes_per_param(const Device& d, const Training& tr);

}  // namespace poseidon
