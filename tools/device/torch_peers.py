#!/usr/bin/env python3
"""Time the PyTorch peers of kiln's CUDA backend on this GPU, in the same call as kiln.

Peers: timm models in fp16, channels-last (NHWC), random weights, random input on the GPU:
  eager       model(x) launched back to back
  cudagraph   the forward captured once as a CUDA graph (torch.cuda.CUDAGraph) and replayed
  compile     torch.compile, only with --compile: mode max-autotune at batch 1 (4 to 6 minutes per
              model) and reduce-overhead at larger batches, the modes of the recorded peer anchors
              (--compile-mode forces one mode for every batch)
Timed region (the same as `kiln bench --backend cuda`): CUDA events around ITERS back-to-back
launches, divided by ITERS; the median of REPEATS such samples after warm-up. cuDNN autotuning
(cudnn.benchmark) is on, as a user after speed would set it.

This follows the method of the project's recorded peer anchors, written anew for this repository.
Prints one JSON object per line: {"model", "batch", "peer", "ms"}.
Usage: python3 tools/device/torch_peers.py --models resnest50d,resnet50 --batches 1,32 [--compile [--compile-mode M]]
"""
import argparse
import json
import time

import timm
import torch


def time_ms(fn, iters, repeats):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(repeats):
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(stop) / iters)
    samples.sort()
    return samples[len(samples) // 2], samples[0], samples[-1]


def graphed(model, x):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        model(x)
    return graph.replay


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", default="resnest50d,resnet50")
    p.add_argument("--batches", default="1,32")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--compile-mode", default=None, help="one torch.compile mode for every batch")
    args = p.parse_args()
    torch.backends.cudnn.benchmark = True
    for name in args.models.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            torch.manual_seed(0)
            model = timm.create_model(name, pretrained=False).cuda().eval().half()
            model = model.to(memory_format=torch.channels_last)
            x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.half)
            x = x.to(memory_format=torch.channels_last)
            with torch.no_grad():
                peers = {"eager": lambda: model(x), "cudagraph": graphed(model, x)}
                if args.compile:
                    mode = args.compile_mode or ("max-autotune" if batch == 1 else "reduce-overhead")
                    began = time.time()
                    compiled = torch.compile(model, mode=mode)
                    for _ in range(3):
                        compiled(x)
                    peers["compile-" + mode] = lambda: compiled(x)
                for peer, fn in peers.items():
                    iters = 5 if peer == "eager" else args.iters
                    median, low, high = time_ms(fn, iters, args.repeats)
                    row = {"model": name, "batch": batch, "peer": peer, "ms": median, "min_ms": low, "max_ms": high}
                    if peer.startswith("compile"):
                        row["compile_seconds"] = time.time() - began
                    print(json.dumps(row), flush=True)
            del model
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
