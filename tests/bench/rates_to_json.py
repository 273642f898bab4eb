#!/usr/bin/env python3
"""Fold the JSON lines of tests/bench/gpu_rates.py runs into one validation data file
(tests/validation/data/<device>_rates.json), the layout gemm_rates.tests.cpp reads.

    python3 tests/bench/rates_to_json.py OUT.json "SOURCE" RUN/rates.jsonl [MORE/rates.jsonl ...]

SOURCE says which GPU, driver, software and date, and which run gave which section. Figures are
rounded to 5 significant digits; the GEMMs become rows of `gemm_columns`.
"""
import json
import sys

METHOD = ("CUDA events around batches of launches, median of 5 batches of >= 20 ms, random normal data, "
          "inputs rotated over copies > 4x the L2. fwd Y = X W^T, dgrad dX = dY W, wgrad dW = dY^T X "
          "(torch.mm, bf16); fp8: torch._scaled_mm e4m3 with per-tensor scales, bf16 out; grouped: "
          "torch.bmm / torch._grouped_mm over E equal groups of m rows; attention: torch SDPA (flash or "
          "cuDNN backend), causal, bf16, batch 1; FLOP counts 2MNK, causal attention 4 b heads s(s+1)/2 d "
          "forward, 2.5x that backward")
GEMM_SECTIONS = {"large", "wave_N", "wave_M", "reduce_K", "align_N", "align_K", "megatron"}
GEMM_COLUMNS = ["section", "tag", "op", "dtype", "M", "N", "K", "time_s"]
GROUPS = {"grouped": "grouped", "attention": "attention", "attention_backend": "attention_backends",
          "memory": "memory", "host": "host", "wgrad_accumulation": "wgrad_accumulation",
          "attention_sinks": "attention_sinks"}


def rounded(v):
    return float(f"{v:.5g}") if isinstance(v, float) else v


def main():
    out_path, source, inputs = sys.argv[1], sys.argv[2], sys.argv[3:]
    data = {"source": source, "method": METHOD, "device": None, "gemm_columns": GEMM_COLUMNS, "gemms": []}
    for path in inputs:
        for line in open(path):
            rec = {k: rounded(v) for k, v in json.loads(line).items()}
            section = rec.pop("section", None)
            if section == "device":
                if data["device"] is None or "l2_bytes" in rec:
                    data["device"] = dict(section="device", **rec)
            elif section in GEMM_SECTIONS:
                rec["section"] = section
                rec.setdefault("tag", "")
                data["gemms"].append([rec[c] for c in GEMM_COLUMNS])
            elif section in GROUPS:
                data.setdefault(GROUPS[section], []).append(rec)
            elif section is not None:
                data.setdefault(section, []).append(rec)
    with open(out_path, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
