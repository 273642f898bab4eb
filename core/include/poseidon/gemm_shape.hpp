// What a GEMM's shape costs beyond the roofline (docs/model.md, "GEMM efficiency by shape").
#pragma once

#include <algorithm>
#include <cmath>

namespace poseidon {

// The share of its aligned rate a GEMM keeps when a leading dimension (N or K: the row strides
// of the row-major operands and result; the token count M is not one) is not a multiple of 16
// bytes: the tensor-core kernels load 16-byte vectors (and Hopper's TMA needs 16-byte strides),
// so cuBLAS falls back to slower kernels (NVIDIA, "Matrix Multiplication Background User's
// Guide", Tensor Core requirements). Measured on an H200, BF16 (docs/measured-rates.md): 8-byte
// multiples 0.40 of the aligned rate, others 0.14. A width that is not a whole number is an
// average over blocks, not a kernel's shape, and keeps the full rate. operand_bytes may carry a
// block-scaled format's scales (MXFP8 1 + 1/32): they sit in a tensor of their own, so the
// values' width (a multiple of half a byte) sets the stride.
inline double gemm_alignment_factor(double N, double K, double operand_bytes) {
    double f = 1;
    const double value_bytes = std::max(0.5, std::floor(operand_bytes * 2) / 2);
    for (const double dim : {N, K}) {
        if (dim != std::floor(dim)) continue;
        const double bytes = dim * value_bytes;
        if (std::fmod(bytes, 16.0) == 0) continue;
        f = std::min(f, std::fmod(bytes, 8.0) == 0 ? 0.40 : 0.14);
    }
    return f;
}

}  // namespace poseidon
