#!/usr/bin/env python3
"""Two builds of the CLI over issue 37's sweep, shape by shape in turn (docs/performance.md,
"Cheaper probes"): a machine whose speed drifts within a sweep then slows both alike.

usage: ab_sweep.py OLD_POSEIDON NEW_POSEIDON POSEIDON_BENCH selective|full|none [--moe]
Prints one row per shape (CPU seconds of the search, complete, iteration time of the best plan)
and each build's summary; a benchmark, not a test.
"""
import re
import statistics
import subprocess
import sys


def search(binary, scenario):
    out = subprocess.run([binary, "plan", scenario, "--threads", "1", "--top", "3", "--time-limit", "10"], capture_output=True, text=True).stdout
    m = re.search(r"^search: .*?([0-9.]+) s, 1 thread( \(incomplete)?", out, re.M)
    best = re.search(r"^iteration\s+([0-9.]+) s", out, re.M)
    return float(m.group(1)), m.group(2) is None, best.group(1) if best else "-"


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    old, new, bench, recompute = sys.argv[1:5]
    moe = "--moe" in sys.argv[5:]
    rows = []
    print("| types | GPUs | blocks | old s | old complete | old best s | new s | new complete | new best s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for gpus in (64, 1024, 4096):
        for types in (1, 2, 3, 4):
            for blocks in (24, 80, 128):
                scenario = f"/tmp/ab_sweep_{types}_{gpus}_{blocks}_{recompute}_{int(moe)}.json"
                args = [bench, "megatron-scenario", str(types), str(gpus), str(blocks), "--recompute", recompute] + (["--moe"] if moe else [])
                with open(scenario, "w") as f:
                    f.write(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
                row = [types, gpus, blocks, *search(old, scenario), *search(new, scenario)]
                rows.append(row)
                print("| " + " | ".join(str(x) for x in row) + " |", flush=True)
    for i, name in ((3, "old"), (6, "new")):
        complete = sum(r[i + 1] for r in rows)
        within = sum(1 for r in rows if r[i + 1] and r[i] <= 2)
        print(f"{name}: {complete} of {len(rows)} complete, {within} within 2 s, median {statistics.median(r[i] for r in rows):.3f} s")
    print("best plans equal where both complete:", all(r[5] == r[8] for r in rows if r[4] and r[7]))


if __name__ == "__main__":
    main()
