#!/bin/bash
# The plan search under its limits, through the CLI (docs/performance.md, "Limits"): wall time of
# the whole command (search, result and JSON), peak memory, output size, plans and completeness,
# for the inputs of issue 11 under --time-limit. Not a test: the figures depend on the machine.
#   bash tests/bench/limits.sh [build/core/poseidon] [threads ...]   (default threads: 1 and all cores)
# Needs python3 and GNU time (/usr/bin/time).
set -euo pipefail
CLI=${1:-build/core/poseidon}
shift || true
THREADS=${*:-"1 $(nproc)"}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

python3 - "$DIR" <<'EOF'
import json, sys
d = sys.argv[1]
devs = ["a100-sxm4-80gb", "a100-sxm4-40gb", "v100-sxm2-16gb", "v100-sxm2-32gb", "t4-16gb", "a10-24gb", "h100-sxm5-80gb", "rtx2080-8gb"]
huge = {"model": {"name": "big", "num_layers": 10000, "hidden_size": 1024, "num_attention_heads": 8, "vocab_size": 32000, "seq_length": 1024},
        "training": {"global_batch_size": 1024},
        "cluster": {"name": "huge", "groups": [{"device": devs[g % 8], "nodes": 15000, "gpus_per_node": 1, "inter_node_bw_GBps": 25} for g in range(64)]}}
json.dump(huge, open(f"{d}/huge.json", "w"))
def scale(gpus, types, layers, batch):
    names = ["h100-sxm5-80gb", "a100-sxm4-80gb", "l40s-48gb", "v100-sxm2-32gb"]; nic = [400, 200, 50, 100]
    per = gpus // types; gpn = min(8, per)
    return {"model": {"name": "llama-70b-shape", "num_layers": layers, "hidden_size": 8192, "num_attention_heads": 64, "num_kv_heads": 8,
                      "ffn_hidden_size": 28672, "vocab_size": 32000, "seq_length": 4096, "gated_mlp": True, "bias": False, "position_embedding": "rope"},
            "training": {"global_batch_size": batch, "recompute": "full", "sequence_parallel": True, "distributed_optimizer": True},
            "cluster": {"name": "scale", "groups": [{"device": names[t], "nodes": per // gpn, "gpus_per_node": gpn, "inter_node_bw_GBps": nic[t]} for t in range(types)]}}
json.dump(scale(1024, 3, 80, 1024), open(f"{d}/s1024x3.json", "w"))
json.dump({"model": "gpt3-175b", "training": {"global_batch_size": 1536}, "cluster": "dgx-a100-superpod-slice"}, open(f"{d}/gpt3-175b.json", "w"))
json.dump({"model": "llama2-70b", "training": {"global_batch_size": 512}, "cluster": "mixed-h100-a100-4090"}, open(f"{d}/llama2-70b.json", "w"))
EOF
cp "$ROOT/docs/examples/demo.scenario.json" "$DIR/demo.json"

echo "| input | options | threads | exit | wall s | limit x 1.1 + 0.05 s | peak RSS MB | output bytes | plans | complete | stopped by |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
run() {  # name, limit, extra options...
    local name=$1 limit=$2
    shift 2
    for t in $THREADS; do
        set +e
        /usr/bin/time -f "%e %M" -o "$DIR/time" "$CLI" plan "$DIR/$name.json" --time-limit "$limit" --threads "$t" --json "$@" >"$DIR/out" 2>"$DIR/err"
        local rc=$?
        set -e
        read -r wall rss < <(tail -n 1 "$DIR/time")
        python3 - "$DIR/out" "$name" "$limit" "$t" "$rc" "$wall" "$rss" "$*" <<'EOF'
import json, os, sys
out, name, limit, t, rc, wall, rss, opts = sys.argv[1:]
plans = complete = stopped = "-"
try:
    d = json.load(open(out)); s = d["stats"]
    plans, complete, stopped = len(d["plans"]), "yes" if s["complete"] else "no", s["stopped_by"] or "-"
except Exception:
    pass
print(f"| {name} | --time-limit {limit} {opts} | {t} | {rc} | {float(wall):.2f} | {float(limit) * 1.1 + 0.05:.3f} | {int(rss) / 1024:.0f} | {os.path.getsize(out)} | {plans} | {complete} | {stopped} |")
EOF
    done
}
run demo 0.001
run s1024x3 0.001
run s1024x3 1
run gpt3-175b 1 --exhaustive
run llama2-70b 1 --exhaustive
run huge 0.3
run huge 1
run huge 10
run huge 1 --memory-cap 0.05
