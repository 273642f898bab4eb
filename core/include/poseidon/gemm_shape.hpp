// What a kernel's shape costs beyond the roofline (docs/model.md, "GEMM efficiency by shape" and
// "Attention core").
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

// One TP rank's share of the LM head's vocabulary: Megatron pads the vocabulary to a multiple of
// 128 t (--make-vocab-size-divisible-by 128), so the shard is a whole, aligned width.
inline double padded_vocab_shard(double vocab_size, double tp) { return std::ceil(vocab_size / (128 * tp)) * 128; }

// Flash attention takes one exponential per score element on the SMs' special-function units
// beside its matrix FLOPs: 2 (d_qk + d_v) forward, 2.5x that backward (which recomputes the
// exponential once). The two do not fully overlap (Shah et al. 2024, FlashAttention-3, arXiv
// 2407.08608, sec. 3: an H100 has 989 TFLOP/s of matmul and 3.9 TFLOP/s of exponentials), so
// narrower heads run at a lower share of the peak. attention_efficiency is the rate of 128-wide
// heads (d_qk + d_v = 256); measured on an H200 with cuDNN, 64-wide heads ran at 0.71-0.79 of it
// forward and 0.75-0.83 backward, where this gives 0.75 and 0.86 (docs/measured-rates.md).
inline double head_width_factor(double flops_per_exp, double matrix_flops_per_score, double reference_flops_per_score) {
    if (flops_per_exp <= 0 || matrix_flops_per_score <= 0) return 1;
    const double share = matrix_flops_per_score / (matrix_flops_per_score + flops_per_exp);
    return share / (reference_flops_per_score / (reference_flops_per_score + flops_per_exp));
}

}  // namespace poseidon
