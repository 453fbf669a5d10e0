#!/usr/bin/env python3
"""Print the latency table of tools/device/bench_cuda.sh: kiln's CUDA backend against the PyTorch
peers timed in the same call (ratios > 1: kiln is faster), and kiln's kernel time per group.

Reads OUT/kiln_<model>_b<batch>.json (kiln bench --json) and OUT/peers.jsonl (torch_peers.py).
torch.compile: whichever mode torch_peers.py --compile timed (max-autotune at batch 1, reduce-overhead
at 32); without --compile, the figures recorded on 2026-11-30 on an H200 (another call, so not a
same-call ratio) are shown for reference.
"""
import argparse
import json
from pathlib import Path

RECORDED_COMPILE = {("resnest50d", 1): 0.702, ("resnest50d", 32): 2.62, ("resnet50", 1): 0.568, ("resnet50", 32): 1.46}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    peers = {}
    peers_file = args.out / "peers.jsonl"
    if peers_file.exists():
        for line in peers_file.read_text().splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                peers[(row["model"], row["batch"], row["peer"])] = row["ms"]
    print("== latency, fp16 NHWC, median ms (device events around back-to-back replays; same call)")
    header = f"  {'model':11s} {'batch':>5s} {'kiln':>8s} {'spread':>15s} {'eager':>8s} {'cudagraph':>9s} {'compile':>8s}" \
             f" {'x eager':>8s} {'x graph':>8s} {'x compile':>9s}"
    print(header)
    groups_lines = []
    for path in sorted(args.out.glob("kiln_*_b*.json")):
        report = json.loads(path.read_text())
        name, batch = path.stem[len("kiln_"):].rsplit("_b", 1)
        batch = int(batch)
        lat = report["latency"]
        kiln = lat["median_ms"]
        eager = peers.get((name, batch, "eager"))
        graph = peers.get((name, batch, "cudagraph"))
        compiled, note = None, ""
        for mode in ("max-autotune", "reduce-overhead", "default"):
            if (name, batch, "compile-" + mode) in peers:
                compiled, note = peers[(name, batch, "compile-" + mode)], f" (compile: {mode}, same call)"
                break
        if compiled is None and (name, batch) in RECORDED_COMPILE:
            compiled, note = RECORDED_COMPILE[(name, batch)], " (compile: recorded anchor, other call)"
        fmt = lambda v: f"{v:8.3f}" if v else f"{'-':>8s}"
        ratio = lambda v: f"{v / kiln:8.2f}x" if v else f"{'-':>9s}"
        spread = f"{lat['min_ms']:.3f}-{lat['p90_ms']:.3f}"
        print(f"  {name:11s} {batch:5d} {kiln:8.3f} {spread:>15s} {fmt(eager)} {fmt(graph):>9s} {fmt(compiled)}"
              f" {ratio(eager)} {ratio(graph)} {ratio(compiled):>9s}{note}")
        prof = report.get("profile")
        if prof:
            total = prof["total_ms"]
            parts = ", ".join(f"{g} {ms:.3f} ({100 * ms / total:.0f}%)" for g, ms in sorted(prof["groups_ms"].items()))
            groups_lines.append(f"  {name} b{batch}: total {total:.3f} ms: {parts}")
    print("== kiln kernel time per group (each step timed alone as CUDA graph replays; sums exceed the whole replay by the per-graph launch cost)")
    for line in groups_lines:
        print(line)


if __name__ == "__main__":
    main()
