#!/usr/bin/env python3
"""Measure the device memory a training process holds besides its tensors (docs/measured-rates.md,
"Memory outside the tensors"): the CUDA context, cuBLAS / cuBLASLt and cuDNN workspaces and
handles, and an NCCL communicator, as the driver's used memory minus PyTorch's reserved pool.

A benchmark, not a test: it needs PyTorch and a CUDA GPU. Each step runs in a fresh process under
CUDA_MODULE_LOADING=LAZY (PyTorch's default) and EAGER, and prints one JSON line per step.

    python3 tests/bench/gpu_reserve.py > reserve.jsonl
"""
import json
import os
import subprocess
import sys

STEPS = ["context", "cublas", "cublaslt_fp8", "cudnn_attention", "nccl"]


def child(last_step):
    import torch
    dev = torch.device("cuda", 0)
    out = []

    def mark(step):
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        out.append({"step": step, "used_MiB": (total - free) / 2**20,
                    "torch_reserved_MiB": torch.cuda.memory_reserved() / 2**20,
                    "outside_torch_MiB": (total - free - torch.cuda.memory_reserved()) / 2**20})

    x = torch.ones(1, device=dev)
    mark("context")
    if last_step == "context":
        return out
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    (a @ a).sum().item()
    mark("cublas")
    if last_step == "cublas":
        return out
    f8 = torch.float8_e4m3fn
    one = torch.ones((), device=dev)
    torch._scaled_mm(a.to(f8), a.to(f8).t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    mark("cublaslt_fp8")
    if last_step == "cublaslt_fp8":
        return out
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q = torch.randn(1, 16, 4096, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()
    mark("cudnn_attention")
    if last_step == "cudnn_attention":
        return out
    import torch.distributed as dist
    try:
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29531", world_size=1, rank=0, device_id=dev)
        t = torch.randn(256 << 20, device=dev, dtype=torch.bfloat16)
        dist.all_reduce(t)
        o = torch.empty_like(t)
        dist.all_gather_into_tensor(o, t)
        dist.reduce_scatter_tensor(t, o)
        mark("nccl")
        dist.destroy_process_group()
    except Exception as e:  # the steps before still count
        out.append({"step": "nccl", "error": str(e)[-300:]})
    return out


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2])))
        sys.exit(0)
    for loading in ["LAZY", "EAGER"]:
        env = dict(os.environ, CUDA_MODULE_LOADING=loading)
        r = subprocess.run([sys.executable, __file__, "--child", STEPS[-1]], env=env, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            print(json.dumps({"loading": loading, "error": r.stderr[-600:]}))
            continue
        for rec in json.loads(r.stdout.strip().splitlines()[-1]):
            rec["loading"] = loading
            print(json.dumps(rec))
