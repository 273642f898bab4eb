#!/usr/bin/env python3
"""Measure one GPU's GEMM, grouped-GEMM, attention and memory rates for the device presets.

A benchmark, not a test: it needs PyTorch and a CUDA GPU, prints a table and writes JSON lines
(one measurement each) to the folder named by the first argument (default: current folder).
The figures ground `matmul_efficiency`, `attention_efficiency`, `memory_bw_efficiency` and
`kernel_overhead_us` of a device preset and the GEMM-by-shape model (docs/model.md, "GEMM
efficiency by shape"); docs/measured-rates.md quotes a run.

    python3 tests/bench/gpu_rates.py OUTDIR

Method (after NVIDIA's "Matrix Multiplication Background" guide and the usual benchmarking
practice): random normal data (zeros run faster than real data), warm-up first, CUDA events
around batches of launches, the median of several batches, and inputs rotated over enough copies
to exceed the L2 cache so that small shapes are not timed out of the cache.
"""
import json
import math
import os
import statistics
import sys
import time

import torch

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
# optional second argument: a comma-separated subset of sections (default: all of main's)
ONLY = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None
os.makedirs(OUT, exist_ok=True)
DEV = torch.device("cuda")
PROPS = torch.cuda.get_device_properties(DEV)
L2_BYTES = getattr(PROPS, "L2_cache_size", 60 << 20)
ROTATE_BYTES = 4 * L2_BYTES
RESULTS = open(os.path.join(OUT, "rates.jsonl"), "w")
T0 = time.time()


def emit(rec):
    RESULTS.write(json.dumps(rec) + "\n")
    RESULTS.flush()


def timed(fn, n_sets, min_batch_ms=20.0, batches=5):
    """Median seconds per call of fn(i) over rotating input sets i."""
    for i in range(3):
        fn(i % n_sets)
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn(0)
    stop.record()
    torch.cuda.synchronize()
    one_ms = max(start.elapsed_time(stop), 1e-3)
    reps = max(3, min(2000, int(min_batch_ms / one_ms)))
    samples = []
    for _ in range(batches):
        start.record()
        for r in range(reps):
            fn(r % n_sets)
        stop.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(stop) / 1e3 / reps)
    return statistics.median(samples)


def copies_for(nbytes):
    return max(1, min(32, math.ceil(ROTATE_BYTES / max(nbytes, 1))))


def gemm(section, M, N, K, op="fwd", dtype=torch.bfloat16, tag=""):
    """C[M,N] = A[M,K] B[K,N] in the layouts Megatron's linear layers use.

    fwd: Y = X W^T (X row-major T x K, W row-major N x K); dgrad: dX = dY W (W row-major);
    wgrad: dW = dY^T X (both row-major, the reduction over tokens)."""
    nbytes = 2 * (M * K + K * N + M * N)
    n = copies_for(nbytes)
    try:
        if op == "fwd":
            A = [torch.randn(M, K, device=DEV, dtype=dtype) for _ in range(n)]
            B = [torch.randn(N, K, device=DEV, dtype=dtype) for _ in range(n)]
            fn = lambda i: torch.mm(A[i], B[i].t())
        elif op == "dgrad":
            A = [torch.randn(M, K, device=DEV, dtype=dtype) for _ in range(n)]
            B = [torch.randn(K, N, device=DEV, dtype=dtype) for _ in range(n)]
            fn = lambda i: torch.mm(A[i], B[i])
        else:  # wgrad: M x N output, reduction K (tokens) from K x M and K x N row-major inputs
            A = [torch.randn(K, M, device=DEV, dtype=dtype) for _ in range(n)]
            B = [torch.randn(K, N, device=DEV, dtype=dtype) for _ in range(n)]
            fn = lambda i: torch.mm(A[i].t(), B[i])
        s = timed(fn, n)
    except Exception as e:  # an unsupported shape is a finding, not a crash
        emit({"section": section, "op": op, "M": M, "N": N, "K": K, "error": str(e)[:200]})
        return None
    finally:
        A = B = None
        torch.cuda.empty_cache()
    tflops = 2 * M * N * K / s / 1e12
    emit({"section": section, "tag": tag, "op": op, "dtype": str(dtype).split(".")[-1],
          "M": M, "N": N, "K": K, "time_s": s, "tflops": tflops})
    return tflops


def gemm_fp8(section, M, N, K, tag=""):
    """Per-tensor scaled FP8 e4m3 GEMM (Transformer Engine's current-scaling forward)."""
    nbytes = M * K + K * N + 2 * M * N
    n = copies_for(nbytes)
    try:
        f8 = torch.float8_e4m3fn
        A = [torch.randn(M, K, device=DEV).to(f8) for _ in range(n)]
        B = [torch.randn(N, K, device=DEV).to(f8) for _ in range(n)]
        one = torch.ones((), device=DEV)
        fn = lambda i: torch._scaled_mm(A[i], B[i].t(), scale_a=one, scale_b=one,
                                        out_dtype=torch.bfloat16)
        s = timed(fn, n)
    except Exception as e:
        emit({"section": section, "op": "fwd", "dtype": "fp8", "M": M, "N": N, "K": K,
              "error": str(e)[:200]})
        return None
    finally:
        A = B = None
        torch.cuda.empty_cache()
    tflops = 2 * M * N * K / s / 1e12
    emit({"section": section, "tag": tag, "op": "fwd", "dtype": "fp8", "M": M, "N": N, "K": K,
          "time_s": s, "tflops": tflops})
    return tflops


def grouped(section, E, m, N, K, tag=""):
    """E experts' GEMMs of m tokens each: torch.bmm (equal groups) and torch._grouped_mm."""
    out = {}
    nbytes = 2 * E * (m * K + K * N + m * N)
    n = copies_for(nbytes)
    A = [torch.randn(E, m, K, device=DEV, dtype=torch.bfloat16) for _ in range(n)]
    B = [torch.randn(E, N, K, device=DEV, dtype=torch.bfloat16) for _ in range(n)]
    try:
        out["bmm"] = timed(lambda i: torch.bmm(A[i], B[i].transpose(1, 2)), n)
    except Exception as e:
        out["bmm_error"] = str(e)[:200]
    if hasattr(torch, "_grouped_mm"):
        try:
            flat = [a.reshape(E * m, K) for a in A]
            offs = torch.arange(1, E + 1, device=DEV, dtype=torch.int32) * m
            out["grouped_mm"] = timed(
                lambda i: torch._grouped_mm(flat[i], B[i].transpose(1, 2), offs=offs), n)
        except Exception as e:
            out["grouped_mm_error"] = str(e)[:200]
    A = B = None
    torch.cuda.empty_cache()
    flops = 2 * E * m * N * K
    rec = {"section": section, "tag": tag, "E": E, "m": m, "N": N, "K": K}
    for k, v in out.items():
        if k.endswith("error"):
            rec[k] = v
        else:
            rec[k + "_time_s"] = v
            rec[k + "_tflops"] = flops / v / 1e12
    emit(rec)
    return rec


def attention(b, heads, s, d, causal=True, backend=None):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION] if backend is None else [getattr(SDPBackend, backend)]
    q = torch.randn(b, heads, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn_like(q, requires_grad=True)
    v = torch.randn_like(q, requires_grad=True)
    pairs = s * (s + 1) / 2 if causal else s * s
    fwd_flops = 4 * b * heads * pairs * d
    rec = {"section": "attention" if backend is None else "attention_backend", "backend": backend or "flash|cudnn",
           "b": b, "heads": heads, "s": s, "d": d, "causal": causal}
    try:
        with sdpa_kernel(backends):
            f = lambda i: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            with torch.no_grad():
                t_f = timed(f, 1)
            o = f(0)
            g = torch.randn_like(o)

            def fb(i):
                out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                out.backward(g)
            t_fb = timed(fb, 1)
        rec.update({"fwd_time_s": t_f, "fwd_tflops": fwd_flops / t_f / 1e12,
                    "fwd_bwd_time_s": t_fb, "fwd_bwd_tflops": 3.5 * fwd_flops / t_fb / 1e12,
                    "bwd_time_s": t_fb - t_f, "bwd_tflops": 2.5 * fwd_flops / (t_fb - t_f) / 1e12})
    except Exception as e:
        rec["error"] = str(e)[:200]
    emit(rec)
    return rec


def memory():
    n = 1 << 30  # 2 GiB of bf16 per buffer
    x = torch.randn(n, device=DEV, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    s = timed(lambda i: y.copy_(x), 1)
    emit({"section": "memory", "op": "copy", "bytes": 4 * n, "time_s": s, "GBps": 4 * n / s / 1e9})
    z = torch.empty_like(x)
    s2 = timed(lambda i: torch.add(x, y, out=z), 1)
    emit({"section": "memory", "op": "add", "bytes": 6 * n, "time_s": s2, "GBps": 6 * n / s2 / 1e9})
    x = y = z = None
    torch.cuda.empty_cache()
    return 4 * n / s / 1e9, 6 * n / s2 / 1e9


def launch_overhead():
    a = torch.randn(64, 64, device=DEV, dtype=torch.bfloat16)
    s = timed(lambda i: torch.mm(a, a), 1, min_batch_ms=10)
    emit({"section": "overhead", "op": "mm64", "time_s": s})
    return s


def host_overhead():
    """Host time per eager PyTorch operator (Python + dispatcher + launch) with the GPU never the
    bottleneck: many tiny ops enqueued, host wall clock over their count."""
    x = torch.zeros(8, device=DEV)
    for name, op in [("add_", lambda: x.add_(1.0)), ("mul", lambda: x * 2.0),
                     ("mm64", lambda: torch.mm(x.view(2, 4), x.view(4, 2)))]:
        for _ in range(200):
            op()
        torch.cuda.synchronize()
        n = 20000
        t0 = time.perf_counter()
        for _ in range(n):
            op()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        emit({"section": "host", "op": name, "host_us_per_op": (t1 - t0) / n * 1e6})
        print(f"host {name}: {(t1 - t0) / n * 1e6:.2f} us per op")


def attention_backends():
    for backend in ["FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"]:
        for d in [64, 128]:
            for heads in [8, 16, 64]:
                for s in [4096, 8192]:
                    r = attention(1, heads, s, d, backend=backend)
                    if "error" not in r:
                        print(f"{backend} d{d} h{heads} s{s}: f+b {r['fwd_bwd_tflops'] / 989.4:.2f}, fwd {r['fwd_tflops'] / 989.4:.2f}")
                    else:
                        print(f"{backend} d{d} h{heads} s{s}: {r['error'][:80]}")


def attention_sinks():
    """GPT-OSS attention (64 query heads, 8 KV groups, head dim 64, learned sinks): cuDNN's fused
    causal kernel beside Transformer Engine's unfused path (scores materialised, one sink logit per
    head joined to each row's softmax), full causal and a 128-token sliding window."""
    heads, groups, d = 64, 8, 64
    for b, s in [(1, 4096), (4, 4096)]:
        fwd_flops = 4 * b * heads * s * (s + 1) / 2 * d
        attention(b, heads, s, d, backend="CUDNN_ATTENTION")
        q = torch.randn(b, heads, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(b, groups, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn_like(k, requires_grad=True)
        sink = torch.zeros(heads, device=DEV, dtype=torch.float32, requires_grad=True)
        idx = torch.arange(s, device=DEV)
        for window in [None, 128]:
            mask = idx[None, :] > idx[:, None]
            if window is not None:
                mask = mask | (idx[None, :] <= idx[:, None] - window)

            def unfused(i):
                kk = k.repeat_interleave(heads // groups, dim=1)
                vv = v.repeat_interleave(heads // groups, dim=1)
                sc = torch.matmul(q, kk.transpose(-1, -2)) * d ** -0.5
                sc = sc.masked_fill(mask, float("-inf"))
                sk = sink.to(sc.dtype).view(1, heads, 1, 1).expand(b, heads, s, 1)
                pr = torch.softmax(torch.cat([sc, sk], dim=-1), dim=-1)[..., :s]
                return torch.matmul(pr, vv)
            rec = {"section": "attention_sinks", "path": "unfused", "b": b, "heads": heads, "groups": groups,
                   "s": s, "d": d, "window": window}
            try:
                with torch.no_grad():
                    t_f = timed(unfused, 1, batches=3)
                g = torch.randn(b, heads, s, d, device=DEV, dtype=torch.bfloat16)
                t_fb = timed(lambda i: unfused(i).backward(g), 1, batches=3)
                rec.update({"fwd_time_s": t_f, "fwd_bwd_time_s": t_fb,
                            "causal_fwd_bwd_tflops": 3.5 * fwd_flops / t_fb / 1e12})
                print(f"sinks unfused b{b} s{s} window {window}: fwd {t_f * 1e3:.2f} ms, f+b {t_fb * 1e3:.2f} ms")
            except Exception as e:
                rec["error"] = str(e)[:200]
                print(f"sinks unfused b{b} window {window}: {rec['error'][:80]}")
            emit(rec)
            torch.cuda.empty_cache()


def wgrad_accumulation():
    """The weight gradient as Megatron-Core computes it with --gradient-accumulation-fusion: the
    bf16 product accumulated into the fp32 main_grad by the GEMM (beta = 1), against a bf16 output,
    an fp32 output, and the unfused product plus an fp32 add."""
    shapes = {"llama3-70b tp8 fc1": (7168, 8192), "llama3-70b tp8 fc2": (8192, 3584), "llama3-70b tp8 qkv": (1280, 8192),
              "llama3-70b tp8 proj": (8192, 1024), "llama3-8b tp1 fc1": (28672, 4096), "llama3-8b tp8 proj": (4096, 512)}
    for tag, (N, K) in shapes.items():
        for T in [4096, 16384]:
            dy = torch.randn(T, N, device=DEV, dtype=torch.bfloat16)
            x = torch.randn(T, K, device=DEV, dtype=torch.bfloat16)
            main = torch.zeros(N, K, device=DEV, dtype=torch.float32)
            rec = {"section": "wgrad", "tag": tag, "M": N, "N": K, "K": T}
            variants = {"bf16_out": lambda i: torch.mm(dy.t(), x),
                        "fp32_out": lambda i: torch.mm(dy.t(), x, out_dtype=torch.float32),
                        "fp32_accumulate": lambda i: torch.addmm(main, dy.t(), x, out_dtype=torch.float32, out=main),
                        "unfused_add": lambda i: main.add_(torch.mm(dy.t(), x))}
            for name, fn in variants.items():
                try:
                    rec[name + "_time_s"] = timed(fn, 1)
                except Exception as e:
                    rec[name + "_error"] = str(e)[:160]
            emit(rec)
            print(tag, T, {k: (round(v * 1e6, 1) if isinstance(v, float) else v) for k, v in rec.items() if k.endswith("_s") or k.endswith("error")})
            dy = x = main = None
            torch.cuda.empty_cache()


def main():
    if ONLY is not None:
        emit({"section": "device", "name": PROPS.name, "sms": PROPS.multi_processor_count, "torch": torch.__version__})
        if "host" in ONLY:
            host_overhead()
        if "attention_backends" in ONLY:
            attention_backends()
        if "wgrad" in ONLY:
            wgrad_accumulation()
        if "sinks" in ONLY:
            attention_sinks()
        RESULTS.close()
        return
    emit({"section": "device", "name": PROPS.name, "sms": PROPS.multi_processor_count,
          "l2_bytes": L2_BYTES, "torch": torch.__version__, "cuda": torch.version.cuda,
          "cublas_lt": True})
    print(f"{PROPS.name}: {PROPS.multi_processor_count} SMs, L2 {L2_BYTES >> 20} MiB, torch {torch.__version__}")
    bw_copy, bw_add = memory()
    ovh = launch_overhead()
    print(f"memory copy {bw_copy:.0f} GB/s, add {bw_add:.0f} GB/s; 64^3 mm {ovh * 1e6:.1f} us")

    big = gemm("large", 8192, 8192, 8192)
    print(f"8192^3 bf16 {big:.0f} TFLOP/s")
    big8 = gemm_fp8("large", 8192, 8192, 8192)
    print(f"8192^3 fp8 {big8 if big8 else float('nan'):.0f} TFLOP/s")

    # Wave quantisation: tokens fixed, output width swept across tile multiples.
    for N in list(range(1024, 4097, 128)) + [4160, 4224, 5120, 6144, 7168, 8192]:
        gemm("wave_N", 8192, N, 8192)
    for M in [128, 256, 384, 512, 640, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 16384]:
        gemm("wave_M", M, 8192, 8192)
        gemm_fp8("wave_M", M, 8192, 8192)
    for K in [256, 512, 1024, 2048, 4096, 8192, 16384]:
        gemm("reduce_K", 8192, 8192, K)
    # Alignment: widths off multiples of 8 / 64 (a head dimension of 108, odd TP shards).
    for N in [4095, 4100, 4104, 4112, 4128, 4160, 6912, 6913, 13824, 3456, 3457]:
        gemm("align_N", 8192, N, 4096)
    for K in [4095, 4104, 4160, 3456, 3457]:
        gemm("align_K", 8192, 4096, K)

    # Megatron-LM linear layers of Llama 3 8B / 70B / 405B at TP 1..8, 4096-16384 tokens.
    models = {"llama3-8b": (4096, 14336, 32, 8, 128), "llama3-70b": (8192, 28672, 64, 8, 128),
              "llama3-405b": (16384, 53248, 128, 8, 128)}
    for name, (h, f, a, kv, d) in models.items():
        for t in [1, 2, 4, 8]:
            for T in [4096, 8192, 16384]:
                shapes = {"qkv": ((a + 2 * kv) * d // t, h), "proj": (h, a * d // t),
                          "fc1": (2 * f // t, h), "fc2": (h, f // t)}
                for lin, (N, K) in shapes.items():
                    tag = f"{name} tp{t} T{T} {lin}"
                    gemm("megatron", T, N, K, "fwd", tag=tag)
                    gemm("megatron", T, K, N, "dgrad", tag=tag)
                    gemm("megatron", N, K, T, "wgrad", tag=tag)
                    if T == 8192:
                        gemm_fp8("megatron", T, N, K, tag=tag)
        print(f"{name} done at {time.time() - T0:.0f} s")

    # Grouped expert GEMMs: tokens per expert from 16 to 4096 (Qwen3 235B, DeepSeek-V3, GPT-OSS,
    # Qwen3 30B expert shapes: fc1 gated 2 f_e x h, fc2 h x f_e).
    experts = {"qwen3-235b": (4096, 1536), "deepseek-v3": (7168, 2048), "gpt-oss": (2880, 2880),
               "qwen3-30b": (2048, 768)}
    for name, (h, fe) in experts.items():
        for E in [4, 16]:
            for m in [16, 37, 64, 128, 256, 512, 1024, 2048, 4096]:
                grouped("grouped", E, m, 2 * fe, h, tag=f"{name} fc1")
                grouped("grouped", E, m, h, fe, tag=f"{name} fc2")
        print(f"{name} grouped done at {time.time() - T0:.0f} s")

    for d in [128, 64]:
        for heads in [8, 16, 32, 64]:
            for s in [2048, 4096, 8192, 16384]:
                attention(1, heads, s, d)
    print(f"attention done at {time.time() - T0:.0f} s")
    RESULTS.close()


if __name__ == "__main__":
    main()
