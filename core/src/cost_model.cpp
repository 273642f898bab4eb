// One replica of a stage (docs/model.md, "Compute"): FLOPs and bytes of its blocks, embedding and
// head, timed with the device rates and the stack's costs; its memory is memory_model.cpp's.
#include "block_cost.hpp"
#include "poseidon/combined_1f1b.hpp"
#include "poseidon/cost_model.hpp"
#include "poseidon/gemm_shape.hpp"
#include "poseidon/recompute_modules.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string>

#include "poseidon/error.hpp"
#include "poseidon/json_util.hpp"

namespace poseidon {

namespace {

// Memory traffic of the element-wise kernels of one block, in bytes per token; the op-by-op
// derivation is in docs/model.md, "Memory-bound work".
//   fused (Megatron-LM's apex/TE kernels), replicated over TP (sharded by t with sequence
//   parallelism): two norms (read + write, 2h each) and two bias-dropout-residual adds (read 2h,
//   write h: 3h each) in the activation dtype, plus two 1-byte dropout masks (h each);
//   unfused (torch ops one by one): each bias-dropout-add is a bias add (2h), a dropout (2h) and a
//   residual add (3h): 7h instead of 3h;
//   sharded by t: the MLP activation (fused bias-GeLU read + write f, SwiGLU reads 2f, writes f;
//   unfused a bias add and a GeLU: 4f) and the attention context re-layout (read + write h).
//   Without hidden dropout (model.hidden_dropout 0) no mask is written and the unfused stack runs
//   no dropout op (2h twice): 14h; the fused kernel still adds bias and residual.
constexpr double fused_replicated_accesses_per_h = 10.0;
constexpr double unfused_replicated_accesses_per_h = 18.0;
constexpr double unfused_dropout_accesses_per_h = 4.0;
constexpr double replicated_mask_bytes_per_h = 2.0;
// Attention without flash: bytes per s x s score element besides the two batched GEMMs' own
// input/output (counted in their roofline). Fused scale-mask-softmax read + write (4 B), dropout
// read + write + 1-byte mask (5 B); backward: dropout (5 B) and softmax (6 B) gradients. Unfused,
// scale (4 B), mask fill (4 B + 1 B mask), softmax (4 B) and dropout (5 B) each pass over the
// scores; backward dropout (5), softmax (6), mask (4) and scale (4).
// Without attention dropout (model.attention_dropout 0) PyTorch returns the probabilities as they
// are: no dropout pass (5 B) either way, and one kernel fewer.
constexpr double fused_score_bytes_forward = 9.0;
constexpr double fused_score_bytes_backward = 11.0;
constexpr double unfused_score_bytes_forward = 18.0;
constexpr double unfused_score_bytes_backward = 19.0;
constexpr double score_dropout_bytes = 5.0;
// An unfused softmax in fp32 (Megatron-LM v1's attention_softmax_in_fp32): the cast up (2 + 4 B),
// the softmax on fp32 (8 B) and the cast down (4 + 2 B) replace the fp16 softmax (4 B): +16 B
// forward; backward the softmax gradient on fp32 (12 B instead of 6) and two casts (12 B): +18 B.
constexpr double softmax_fp32_extra_bytes_forward = 16.0;
constexpr double softmax_fp32_extra_bytes_backward = 18.0;

// Backward element-wise traffic relative to the forward (reads the saved input and the incoming
// gradient, writes the input gradient).
constexpr double backward_elementwise_factor = 2.0;
// Element-wise kernels of one block's forward (norms, bias-dropout-adds, activation, re-layout):
// fused 6; unfused 2 norms + 2 x (bias, dropout, add) + bias + GeLU + re-layout = 11.
// Without hidden dropout the unfused stack runs two kernels fewer.
constexpr double fused_elementwise_kernels = 6.0;
constexpr double unfused_elementwise_kernels = 11.0;
// Flash attention's backward does 2.5x the forward's FLOPs (5 matmuls against 2; Dao 2023).
constexpr double flash_backward_factor = 2.5;

// The sustained matrix rate: the precision's peak at the clock the card holds under load.
double effective_peak_flops(const Device& d, const Training& tr) {
    double peak_tflops = d.peak_tflops;
    if (tr.precision == Precision::fp32) {
        // fp32 runs on TF32 tensor cores only where the device has them and the user enabled them
        // (PyTorch leaves torch.backends.cuda.matmul.allow_tf32 off); otherwise at the fp32 rate.
        peak_tflops = tr.tf32 && d.tf32_tflops > 0 ? d.tf32_tflops : fp32_tflops_of(d);
    }
    return peak_tflops * 1e12 * d.sustained_clock_ratio * d.matmul_efficiency;
}

}  // namespace

double effective_memory_bw(const Device& d) { return d.memory_bw_GBps * GB * d.memory_bw_efficiency; }

// Activations, gradients and the bf16 parameters of the low-precision recipes are 2 bytes.
double bytes_per_element(Precision p) { return p == Precision::fp32 ? 4.0 : 2.0; }

double fp32_tflops_of(const Device& d) { return d.fp32_tflops > 0 ? d.fp32_tflops : d.peak_tflops / 8; }

double grad_bytes_per_param(const Training& tr) {
    if (tr.grad_reduce_dtype == "fp32") return 4.0;
    if (!tr.grad_reduce_dtype.empty()) return 2.0;
    return tr.stack.grad_fp32 ? 4.0 : bytes_per_element(tr.precision);
}


void fold_blocking_sends(const Stack& stack, std::vector<StageTimes>& times) {
    if (!stack.p2p_blocking) return;
    for (auto& t : times) {
        t.forward_send_blocking_s = t.send_forward_s;
        t.backward_send_blocking_s = t.send_backward_s;
        t.forward_s += t.send_forward_s;
        t.backward_s += t.send_backward_s;
        t.send_forward_s = t.send_backward_s = 0;
    }
}

namespace detail {

// One block of the replica: everything of replica_cost that the layer count and the stage's
// place in the pipeline do not change (block_cost.hpp).
BlockCost block_cost(const Scenario& sc, const Device& d, int tp, int samples, const StagePosition& pos) {
    const ModelSpec& m = sc.model;
    const Training& tr = sc.training;
    BlockCost blk;
    ReplicaCost& rc = blk.partial;
    // With context parallelism each rank holds s / cp tokens of its replica's samples and the
    // attention of those queries against all keys: per rank, exactly the work of samples / cp
    // whole sequences (causal load balancing), so b stands for that.
    // MoE, MLA, windows, MTP: each block costs the average block of the stage's own (docs/model.md,
    // "Expert parallelism")
    const bool variants = m.has_block_variants();
    const double b = static_cast<double>(samples) / std::max(1, pos.cp);
    const BlockAverage avg = variants ? average_block(m, b, pos.prefix_share) : BlockAverage{};
    // MoE: the MLP split over TP is the dense FFN or the shared experts; the routed experts run on
    // the expert grid (expert_parallel.cpp)
    const double t = tp, s = m.seq_length, h = m.hidden_size, f = variants ? avg.dense_ffn : m.ffn_hidden_size, a = m.num_attention_heads;
    const double kv_ratio = static_cast<double>(m.kv_heads()) / m.num_attention_heads;
    const double e = bytes_per_element(tr.precision);
    const double flops_rate = effective_peak_flops(d, tr);
    const double mem_rate = effective_memory_bw(d);
    const double kernel_s = d.kernel_overhead_us * 1e-6;
    const bool sp = tr.sequence_parallel && tp > 1;
    const bool flash = tr.flash_attention && d.flash_attention;
    const bool fused = tr.stack.fused_elementwise;

    // TP collectives inside one block: two all-reduces of the b x s x h activation in the forward and
    // two in the backward (Shoeybi et al. 2019, fig. 3); sequence parallelism replaces each with an
    // all-gather plus a reduce-scatter of the same total volume (Korthikanti et al. 2022, sec. 4.2.2).
    // The TP group sits in one node, so the intra-node link carries it.
    // The caller's group bandwidth is folded into the device by evaluate_stages (intra_node_bw_GBps).
    // NVLink SHARP serves the all-reduces, not sequence parallelism's reduce-scatter and all-gather
    // (docs/model.md, "Links").
    const double ring_bw = d.intra_node_bw_GBps * d.intra_node_link_efficiency * intra_link_factor(d.intra_node_link, tp);
    const double nvls_bw = sp ? 0.0 : nvls_allreduce_bus_bw_GBps(d, d.intra_node_link, tp, tr.stack);
    const double tp_bw = std::max(ring_bw, nvls_bw);
    if (tp > 1) rc.tp_bus_bw_GBps = tp_bw, rc.tp_nvls = nvls_bw > ring_bw;
    const double lat = (d.collective_latency_us + intra_link_extra_latency_us(d.intra_node_link)) * 1e-6;
    const double act_bytes = b * s * h * e;
    const double one_allreduce_s = ring_allreduce_s(act_bytes, tp, tp_bw, lat);

    // ---- one block, analytic (docs/model.md, "Compute") ----
    // Every GEMM is timed on the roofline: max(FLOPs at the achievable matmul rate, its operands
    // and result at the achievable memory bandwidth) plus one kernel's fixed cost. Small TP
    // shards and small micro-batches thus run further from peak through memory-boundness and
    // the per-kernel cost, with no per-case factor.
    const double T = b * s;                       // tokens of this replica's micro-batch
    const double Tr = sp ? T / t : T;             // tokens seen by the replicated (non-TP) ops
    const double dh = h / a;
    const double kv = h * kv_ratio;
    // The linear layers' GEMMs (forward, dgrad and wgrad) run at a low-precision recipe's rate on
    // quantised operands with a bf16 result; attention, norms, embedding and LM head stay bf16
    // (docs/model.md, "Low precision").
    const bool lp = is_low_precision(tr.precision);
    const QuantRecipe quant = quant_recipe(d, tr.precision);
    const double lp_rate = lp ? low_precision_tflops(d, tr.precision) * 1e12 * d.sustained_clock_ratio * d.matmul_efficiency * d.low_precision_efficiency_ratio : flops_rate;
    const GemmTimer timer{flops_rate, lp_rate, mem_rate, kernel_s, e, lp ? quant.operand_bytes : e, lp, 2 * grad_bytes_per_param(tr)};
    auto gemm_s = [&](double batch, double M, double N, double K) { return timer.gemm_s(batch, M, N, K); };
    auto linear_s = [&](double M, double N, double K) { return timer.linear_s(M, N, K); };
    const double g = m.gated_mlp ? 2.0 : 1.0;
    // each linear layer's forward and backward (dgrad + wgrad), summed over the block's GEMMs
    const auto linear_sums = [&](std::span<const GemmShape> shapes) {
        std::pair<double, double> fb{0.0, 0.0};
        for (const GemmShape& x : shapes) {
            fb.first += x.count * linear_s(x.M, x.N, x.K);
            fb.second += x.count * timer.linear_bwd_s(x.M, x.N, x.K);
        }
        return fb;
    };
    const std::array<GemmShape, 2> attn_plain{{{T, (h + 2 * kv) / t, h}, {T, h, h / t}}};  // QKV, attention projection
    const std::array<GemmShape, 2> mlp{{{T, f * g / t, h}, {T, h, f / t}}};                 // MLP up (and gate), MLP down
    const auto [attn_linear, attn_linear_bwd] = variants ? linear_sums(attention_gemms(m, T, t, avg.router_share)) : linear_sums(attn_plain);
    const auto [mlp_linear, mlp_linear_bwd] = f > 0 ? linear_sums(mlp) : std::pair<double, double>{0.0, 0.0};
    const double linear_fwd = attn_linear + mlp_linear, linear_bwd = attn_linear_bwd + mlp_linear_bwd;
    // The routed experts of the MoE blocks (their share of the average block): compute on this
    // GPU, dispatch and combine on the expert-parallel links (docs/model.md, "Expert parallelism").
    const double moe_share = m.is_moe() ? avg.router_share : 0.0;
    const MoeShape moe_x = moe_share > 0 ? moe_shape(sc, T / t, pos) : MoeShape{};
    const MoeCost moe = moe_share > 0 ? moe_cost(moe_x, MoeRates{lp_rate, mem_rate, kernel_s, e, lp ? quant.operand_bytes : e, d.comm_compute_slowdown, timer.wgrad_bytes}, pos.ep_link) : MoeCost{};
    // A full-iteration CUDA graph replays the iteration without the host (docs/model.md, "Host
    // dispatch and fixed costs").
    const bool host_free = tr.cuda_graph_impl == "full_iteration";
    const double moe_gpu_fwd = moe.forward_s + (lp ? quantize_s(quant, moe.quant_elements_forward, 2, mem_rate, kernel_s) : 0.0);
    // The dropless layer waits for its token counts on the host, which then issues the expert
    // section while the GPU runs it: the section takes the longer of the two (docs/model.md, "Host
    // time of a dropless MoE layer").
    const double moe_sync_s = moe_share > 0 && !host_free ? moe_sync_host_s(moe_x, tr.stack) : 0.0;
    const double moe_fwd = moe_share * std::max(moe_gpu_fwd, moe_sync_s);
    const double moe_bwd = moe_share * (moe.backward_s + (lp ? quantize_s(quant, moe.quant_elements_backward, 2, mem_rate, kernel_s) : 0.0));
    double ep_fwd = moe_share * moe.comm_forward_s, ep_bwd = moe_share * moe.comm_backward_s;
    if (tr.moe_shared_expert_overlap && moe_share > 0 && avg.shared_ffn > 0 && tr.moe_token_dispatcher != "flex") {
        // The shared experts run beside the token exchange (expert_parallel.cpp); what they hide
        // of it leaves the critical path, and the compute beside it runs kappa slower.
        const double ws = avg.shared_ffn / moe_share, kappa = d.comm_compute_slowdown;
        const double fc1 = linear_s(T, ws * g / t, h), fc2 = linear_s(T, h, ws / t);
        ep_fwd -= (1 - kappa) * moe_share * shared_expert_hidden_s(fc1, fc2, moe.comm_forward_s);
        ep_bwd -= (1 - kappa) * moe_share * shared_expert_hidden_s(2 * fc1, 2 * fc2, moe.comm_backward_s);
    }
    // Each GEMM input is quantised before its forward (the inputs of the replicated-width GEMMs
    // before sequence parallelism's all-gather), each output gradient before its dgrad and wgrad.
    // Per-tensor current scaling and NVFP4's global scale need an amax all-reduce over TP for the
    // tensors sequence parallelism gathers: a latency each.
    const double quant_fwd = lp ? quantize_s(quant, Tr * h * 2 + T * h / t + T * f / t, 4, mem_rate, kernel_s) : 0.0;
    const double quant_bwd = lp ? quantize_s(quant, T * (h + 2 * kv) / t + Tr * h * 2 + T * f * g / t, 4, mem_rate, kernel_s) : 0.0;
    const double heads = b * a / t;               // attention heads of this replica's micro-batch
    const double scores = heads * s * s;          // s x s score elements per GPU
    double core_fwd = 0, core_bwd = 0;
    const double no_dropout = m.attention_dropout > 0 ? 0.0 : 1.0;
    const double score_kernels = (fused ? 2 : 4) - no_dropout;  // without flash attention
    // An unfused fp32 softmax casts up and back: two more kernels and their bytes. In fp32 training
    // the scores are fp32 already and there is nothing to cast (as in replica_memory).
    const bool fp32_softmax = !flash && !fused && tr.stack.softmax_fp32 && e < 4.0;
    if (flash) {
        // Causal flash attention computes the lower triangle only: half of 4bs^2h/t, at the matmul rate.
        const double core_flops = variants ? avg.core_causal_flops / t : 0.5 * 4 * b * s * s * h / t;
        // Fused attention kernels reach their own fraction of the peak, not the GEMMs' (Dao 2023:
        // FlashAttention-2 50-73 % on A100; Shah et al. 2024: ~35 % on H100, FlashAttention-3 up to
        // 75 % forward); attention_efficiency 0 keeps the GEMM rate.
        const double attn_rate = d.attention_efficiency > 0 ? flops_rate / d.matmul_efficiency * d.attention_efficiency : flops_rate;
        const double widths = m.mla ? m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim : 2 * (m.head_dim > 0 ? m.head_dim : dh);  // d_qk + d_v
        const double c = d.attention_efficiency > 0 ? d.attention_flops_per_exp : 0.0;
        core_fwd = core_flops / (attn_rate * head_width_factor(c, 2 * widths, 2 * 256)) + kernel_s;
        core_bwd = flash_backward_factor * core_flops / (attn_rate * head_width_factor(c, 5 * widths, 5 * 256)) + 2 * kernel_s;
    } else {
        const double bmm = gemm_s(heads, s, s, dh) + gemm_s(heads, s, dh, s);  // QK^T and AV
        const double bmm_bwd = timer.gemm_bwd_s(heads, s, s, dh) + timer.gemm_bwd_s(heads, s, dh, s);
        const double fwd_bytes = (fused ? fused_score_bytes_forward : unfused_score_bytes_forward + (fp32_softmax ? softmax_fp32_extra_bytes_forward : 0.0)) -
                                 no_dropout * score_dropout_bytes;
        const double bwd_bytes = (fused ? fused_score_bytes_backward : unfused_score_bytes_backward + (fp32_softmax ? softmax_fp32_extra_bytes_backward : 0.0)) -
                                 no_dropout * score_dropout_bytes;
        core_fwd = bmm + scores * fwd_bytes / mem_rate + (score_kernels + (fp32_softmax ? 2 : 0)) * kernel_s;
        core_bwd = bmm_bwd + scores * bwd_bytes / mem_rate + (score_kernels + (fp32_softmax ? 2 : 0)) * kernel_s;
    }
    // Context parallelism's exchange of keys and values around the attention (context_parallel.cpp).
    // (the heads' own widths: MLA exchanges its up-projected keys and values, frontier-facts.md section 4)
    const AttentionWidths aw = pos.cp > 1 ? attention_widths(m) : AttentionWidths{};
    const CpExtra cpx = cp_extra(tr.cp_comm_type, pos.cp, core_fwd, core_bwd, T * (aw.k + aw.v) / t * e, T * (aw.q + aw.k + aw.v) / t * e, T * aw.out / t * e,
                                 CpLink{pos.cp_bw_GBps, pos.cp_latency_s}, d.comm_compute_slowdown);
    core_fwd += cpx.forward_s;
    core_bwd += cpx.backward_s;
    const bool hidden_dropout = m.hidden_dropout > 0;
    const double replicated_accesses =
        fused ? fused_replicated_accesses_per_h : unfused_replicated_accesses_per_h - (hidden_dropout ? 0.0 : unfused_dropout_accesses_per_h);
    const double mask_bytes = hidden_dropout ? replicated_mask_bytes_per_h : 0.0;
    const double mlp_accesses = (m.gated_mlp ? 3.0 : 2.0) * f + (fused ? 0.0 : 2.0 * f);  // unfused: a separate bias add
    // QK layer norm (Qwen3): each head's queries and keys read and written once more, in two kernels
    const AttentionWidths qkw = m.qk_layernorm ? attention_widths(m) : AttentionWidths{};
    const double qk_norm_accesses = m.qk_layernorm ? 2.0 * (qkw.q + qkw.k) : 0.0;
    const double elem_bytes = Tr * h * (replicated_accesses * e + mask_bytes) + T / t * (mlp_accesses + 2 * h + qk_norm_accesses) * e;
    const double elementwise_kernels = (fused ? fused_elementwise_kernels : unfused_elementwise_kernels - (hidden_dropout ? 0.0 : 2.0)) + (m.qk_layernorm ? 2.0 : 0.0);
    const double elem_fwd = elem_bytes / mem_rate + elementwise_kernels * kernel_s;
    // TP collectives hidden behind GEMMs (docs/model.md, "Overlap"): with Transformer Engine's
    // userbuffers (training.tp_comm_overlap) a share of each pass's traffic is pipelined with the
    // GEMM it feeds; the async backward all-reduce runs beside the weight-gradient GEMMs. Never
    // more than those GEMMs' time; what is hidden slows the compute beside it.
    const double all_tp = tp > 1 ? 2 * one_allreduce_s : 0.0;
    const double ub = tr.tp_comm_overlap ? tr.stack.tp_comm_overlap_fraction : 0.0;
    const double hidden_fwd = std::min(ub * all_tp, linear_fwd);
    const double hidden_bwd = std::min(std::max(ub, tr.stack.tp_async_backward ? 1.0 : 0.0) * all_tp, linear_fwd);
    const double kappa = d.comm_compute_slowdown;
    const double fwd_tp = all_tp - hidden_fwd + kappa * hidden_fwd;
    // The host dispatches every kernel of the block (PyTorch eager); when the GPU runs them faster
    // than the CPU issues them, the host's time is the block's time (docs/model.md, "Host dispatch").
    const double kernels_fwd = 4 + (flash ? 1 : 2 + score_kernels + (fp32_softmax ? 2 : 0)) + elementwise_kernels + (tp > 1 ? 2 : 0) +
                               (lp ? 4 * (quant.amax_pass ? 2 : 1) : 0) + moe_share * moe.kernels_forward;
    const double host_fwd_s = host_free ? 0.0 : kernels_fwd * tr.stack.host_us_per_kernel * 1e-6;
    // A stack that synchronises inside the block (per-layer hooks, timers, host-side checks) also
    // exposes a fixed cost per block and pass (layer_overhead_us; twice in the backward).
    const double layer_overhead_s = host_free ? 0.0 : tr.stack.layer_overhead_us * 1e-6;
    const double amax_sync_s = lp && quant.amax_pass && sp ? 2 * lat : 0.0;
    const double layer_fwd_local = std::max(linear_fwd + quant_fwd + core_fwd + elem_fwd + moe_fwd, host_fwd_s - fwd_tp - ep_fwd) + layer_overhead_s + amax_sync_s;
    double layer_fwd = layer_fwd_local + fwd_tp + ep_fwd;

    // Backward: every GEMM becomes two of the same size (input and weight gradient); element-wise
    // kernels move about twice the forward's bytes; two TP collectives of the same volume.
    // As in the forward, the host issues while the GPU waits on the exposed collectives: the block
    // takes max(GPU time with them, the host's time).
    const double bwd_tp = all_tp - hidden_bwd + kappa * hidden_bwd;
    const double bwd_local =
        std::max(linear_bwd + quant_bwd + core_bwd + backward_elementwise_factor * elem_fwd + moe_bwd, 2 * host_fwd_s - bwd_tp - ep_bwd) + 2 * layer_overhead_s + amax_sync_s;
    double recompute = 0, recompute_tp = 0, recompute_ep = 0;
    if (tr.recompute == Recompute::full) {
        recompute = layer_fwd_local;  // the whole forward again, its TP collectives and token exchanges included
        recompute_tp = fwd_tp + ep_fwd;
        recompute_ep = ep_fwd;
    } else if (tr.recompute == Recompute::selective) {
        // the named modules (recompute_modules.cpp); by default the attention core alone
        // (Korthikanti et al. 2022, sec. 5)
        const RecomputeCost rx = module_recompute_cost(sc, avg, timer, BlockForward{T, Tr, t, core_fwd, moe_fwd, ep_fwd, fwd_tp, moe_x});
        recompute = rx.compute_s;
        recompute_tp = rx.tp_s + rx.ep_s;
        recompute_ep = rx.ep_s;
    }
    // a block that recomputes, and one that does not (full recompute of the first
    // recompute_num_layers blocks only: Megatron-Core's block method)
    double layer_bwd = bwd_local + bwd_tp + ep_bwd + recompute + recompute_tp;
    double layer_fwd_tp = fwd_tp, layer_bwd_tp = bwd_tp + recompute_tp;
    const bool some_blocks = tr.recompute == Recompute::full && tr.recompute_num_layers > 0;
    if (tr.overlap_moe_expert_parallel_comm && moe_share > 0)
        rc.ep_pair_save_s = ep_pair_save_s({layer_fwd - moe_fwd - ep_fwd, moe_fwd, ep_fwd}, {layer_bwd - moe_bwd - ep_bwd, moe_bwd, ep_bwd}, kappa);

    // ---- measured profile: replaces the analytic numbers where it has them (apply_measured) ----
    const DeviceProfile* prof = find_device_profile(sc.profile ? &*sc.profile : nullptr, d);
    auto measured = [&](ProfileField field, double& value, double* tp_part, CostSource& src) { apply_measured(prof, tp, samples, field, value, tp_part, src); };
    measured(ProfileField::layer_forward, layer_fwd, &layer_fwd_tp, rc.sources.layer_forward);
    measured(ProfileField::layer_backward, layer_bwd, &layer_bwd_tp, rc.sources.layer_backward);
    // (a measured block is what was measured, recomputing or not: it stands for every block)
    const bool measured_bwd = rc.sources.layer_backward != CostSource::analytic;
    const double plain_bwd = some_blocks && !measured_bwd ? layer_bwd - recompute - recompute_tp : layer_bwd;
    const double plain_bwd_tp = some_blocks && !measured_bwd ? bwd_tp : layer_bwd_tp;

    blk.timer = timer;
    blk.prof = prof;
    blk.T = T, blk.Tr = Tr, blk.mem_rate = mem_rate, blk.kernel_s = kernel_s, blk.e = e, blk.one_allreduce_s = one_allreduce_s;
    blk.hidden_dropout = hidden_dropout, blk.host_free = host_free, blk.some_blocks = some_blocks;
    blk.layer_fwd = layer_fwd, blk.layer_bwd = layer_bwd, blk.layer_fwd_tp = layer_fwd_tp, blk.layer_bwd_tp = layer_bwd_tp;
    blk.plain_bwd = plain_bwd, blk.plain_bwd_tp = plain_bwd_tp;
    blk.ep_fwd = ep_fwd, blk.ep_bwd = ep_bwd, blk.recompute_ep = recompute_ep;
    // what the host's issue of the expert section adds to the forward beyond the GPU's (moe_fwd)
    blk.host_wait_fwd = moe_share * std::max(0.0, moe_sync_s - moe_gpu_fwd);
    return blk;
}

}  // namespace detail
}  // namespace poseidon
