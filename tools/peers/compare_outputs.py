#!/usr/bin/python3
"""The tables of tools/peers/ort_int8_peer.sh, from the files it leaves in its work folder.

    compare_outputs.py WORK                          # accuracy: kiln.{fp32,int8}.npy, ort.{fp32,int8}.npy
    compare_outputs.py WORK --timings 1,8 ROUNDS     # speed: {kiln,ort}.{fp32,int8}.bB.R.json

Exits 1 when ONNX Runtime's fp32 model disagrees with kiln's fp32 plan beyond float roundoff (then the two
are not the same network, and nothing else here means anything), or its int8 model with kiln's int8 plan
beyond what its extra quantization points explain.
"""
import json
import statistics
import sys

import numpy as np

# fp32 through two libraries differs by accumulation order only: about 1e-6 relative on these networks.
SAME_NETWORK_BOUND = 1e-3
# kiln's int8 plans are within about 1e-2 of fp32 on these networks, and ONNX Runtime's int8 model, with
# more tensors quantized, as far again: 5e-2 leaves room for both and still fails a model with a wrong
# scale or an unquantized layer mistaken for an int8 one (whose error is of the order of 1).
SAME_INT8_BOUND = 5e-2


def accuracy(work):
    y = {f"{who} {p}": np.load(f"{work}/{who}.{p}.npy") for who in ("kiln", "ort") for p in ("fp32", "int8")}
    pairs = [("ort fp32", "kiln fp32"), ("kiln int8", "kiln fp32"), ("ort int8", "kiln fp32"), ("ort int8", "kiln int8")]
    print(f"{len(y['kiln fp32'])} images")
    print("| output | against | ‖a - b‖ / ‖b‖ | top-1 agreement |")
    print("| --- | --- | --- | --- |")
    errors = {}
    for a, b in pairs:
        errors[a, b] = float(np.linalg.norm(y[a] - y[b]) / np.linalg.norm(y[b]))
        agree = float(np.mean(y[a].argmax(1) == y[b].argmax(1)))
        print(f"| {a} | {b} | {errors[a, b]:.2e} | {agree:.0%} |")
    if errors["ort fp32", "kiln fp32"] > SAME_NETWORK_BOUND:
        sys.exit(f"ONNX Runtime's fp32 model differs from kiln's fp32 plan by {errors['ort fp32', 'kiln fp32']:.2e} "
                 f"(> {SAME_NETWORK_BOUND}): not the same network")
    if errors["ort int8", "kiln int8"] > SAME_INT8_BOUND:
        sys.exit(f"ONNX Runtime's int8 model differs from kiln's int8 plan by {errors['ort int8', 'kiln int8']:.2e} "
                 f"(> {SAME_INT8_BOUND}): not the same quantization")


def timings(work, batches, rounds):
    print("| batch | runtime | precision | round medians (ms) | median (ms) | vs kiln fp32 | fastest (ms) | kiln loaded-machine warning |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for b in batches.split(","):
        runs = {(who, p): [json.load(open(f"{work}/{who}.{p}.b{b}.{r}.json")) for r in range(1, int(rounds) + 1)]
                for who in ("kiln", "ort") for p in ("fp32", "int8")}
        median = {k: statistics.median(j["latency"]["median_ms"] for j in v) for k, v in runs.items()}
        base = median["kiln", "fp32"]
        for (who, p), v in runs.items():
            warned = "yes" if any(j.get("warnings") for j in v) else ("no" if who == "kiln" else "")
            rounds_ms = ", ".join(f"{j['latency']['median_ms']:.2f}" for j in v)
            fastest = min(j["latency"]["min_ms"] for j in v)
            print(f"| {b} | {'kiln' if who == 'kiln' else 'ONNX Runtime'} | {p} | {rounds_ms} | {median[who, p]:.2f} | "
                  f"{base / median[who, p]:.2f}x | {fastest:.2f} | {warned} |")
        print(f"| {b} | kiln int8 vs ONNX Runtime int8 | | | | {median['ort', 'int8'] / median['kiln', 'int8']:.2f}x | | |")


if __name__ == "__main__":
    if len(sys.argv) == 2:
        accuracy(sys.argv[1])
    elif len(sys.argv) == 5 and sys.argv[2] == "--timings":
        timings(sys.argv[1], sys.argv[3], sys.argv[4])
    else:
        sys.exit("usage: compare_outputs.py WORK [--timings BATCHES ROUNDS]")
