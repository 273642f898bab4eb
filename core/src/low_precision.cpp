// Low-precision training (docs/model.md, "Low precision"): the tensor-core rate of each recipe,
// the bytes its quantised operands and copies take, and the memory-bound quantisation kernels in
// front of every linear-layer GEMM. Sources: Transformer Engine's low-precision docs
// (docs/features/low_precision_training/*.rst at d0067d0) and Megatron-Core's FP8 flags, as
// digested in shared/reference/frontier-facts.md, section 3.
#include "poseidon/cost_model.hpp"

namespace poseidon {

double low_precision_tflops(const Device& d, Precision p) {
    switch (p) {
        case Precision::fp8:
        case Precision::fp8_delayed: return d.fp8_tflops;
        // Hopper runs 1x128 / 128x128 blocks as FP8 GEMMs with software block scaling; Blackwell
        // emulates them through its MXFP8 GEMMs (TE fp8_blockwise_scaling.rst): the FP8 rate either way.
        case Precision::fp8_blockwise: return d.fp8_tflops > 0 ? d.fp8_tflops : d.mxfp8_tflops;
        case Precision::mxfp8: return d.mxfp8_tflops;
        case Precision::nvfp4: return d.nvfp4_tflops;
        default: return 0;
    }
}

QuantRecipe quant_recipe(const Device& d, Precision p) {
    QuantRecipe q;
    if (!is_low_precision(p)) return q;
    // A GPU with MX-scaled GEMMs is Blackwell-class (or MI355X): its per-tensor FP8 GEMMs read a
    // column-wise operand in place. Hopper's FP8 GEMMs take only "TN" layouts, so the backward
    // needs a physically transposed copy of each operand (TE performance_considerations.rst).
    const bool reads_columnwise = d.mxfp8_tflops > 0;
    switch (p) {
        case Precision::fp8:  // current scaling: an amax pass over the tensor before the cast
            q = {1.0, !reads_columnwise, true, 0.0};
            break;
        case Precision::fp8_delayed:  // the scale comes from the amax history: one pass
            q = {1.0, !reads_columnwise, false, 0.0};
            break;
        case Precision::fp8_blockwise:  // one fp32 scale per 128 elements; 1x128 and 128x1 differ
            q = {1.0 + 4.0 / 128, true, false, 0.0};
            break;
        case Precision::mxfp8:  // one E8M0 byte per 32 elements; 1x32 and 32x1 blocks differ
            q = {1.0 + 1.0 / 32, true, false, 0.0};
            break;
        case Precision::nvfp4:
            // 4-bit values, one E4M3 scale per 16; the TN-only GEMM stores the column-wise copy
            // transposed, and the wgrad operands pass a 16x16 random Hadamard transform first,
            // which reads the bf16 tensor once more (TE nvfp4.rst; arXiv 2509.25149).
            q = {0.5 + 1.0 / 16, true, true, 2.0};
            break;
        default: break;
    }
    return q;
}

double quantize_s(const QuantRecipe& q, double elements, int tensors, double mem_rate_Bps, double kernel_s) {
    if (q.operand_bytes <= 0 || elements <= 0) return 0;
    const double read = 2.0 * (q.amax_pass ? 2 : 1) + (q.columnwise_copy ? q.hadamard_read_bytes : 0.0);
    const double write = q.operand_bytes * (q.columnwise_copy ? 2 : 1);
    return elements * (read + write) / mem_rate_Bps + tensors * (q.amax_pass ? 2 : 1) * kernel_s;
}

double compute_weight_bytes_per_param(const Device& d, const Training& tr) {
    if (!is_low_precision(tr.precision)) return 0;
    const QuantRecipe q = quant_recipe(d, tr.precision);
    return q.operand_bytes * (q.columnwise_copy ? 2 : 1);
}

}  // namespace poseidon
