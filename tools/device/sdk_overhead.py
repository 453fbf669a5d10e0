#!/usr/bin/env python3
"""What kiln's Python device run costs over the network's CUDA-graph replay (GPU machine, torch with CUDA).

Loads a cuda plan with kiln.load(plan, backend="cuda") and times back-to-back
engine.run(x, out=[y], stream=torch.cuda.current_stream()) calls on torch CUDA tensors: torch.cuda.Event
around every sample of N calls (the device time per call) and the host clock around the same loop (the
host time per call; when it exceeds the device time the loop is host-bound and the GPU idles between
calls). Medians of the samples, as `kiln bench` takes. Given `kiln bench --json`'s median (device events
around 20 graph replays per sample), prints the difference too; the target is under 20 us.

It first checks that the device run's output equals engine.run(numpy) on the same input. Both are runs
of the same context: the same CUDA graph (kernels, tactics, buffers) on the same input bits, only the
input's route differs (a host-to-device copy into the program's buffer, or the torch tensor read in
place), and kiln's kernels add in a fixed order, so the outputs must be bit-identical (the default
--tol 0); --tol gives a relative L2 bound instead.

Prints one JSON object (also written to --json FILE). Exit status: 0 when the check passes, 1 when it
fails, 2 for bad arguments, 3 when there is no CUDA device or no kiln module.
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

TARGET_ADDED_US = 20.0


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("plan", type=Path, help="a plan built with `kiln build ... --backend cuda`")
    p.add_argument("--calls", type=int, default=20, help="engine.run calls per sample (default 20)")
    p.add_argument("--warmup", type=float, default=1.0, help="warm-up seconds (default 1)")
    p.add_argument("--duration", type=float, default=3.0, help="timed seconds (default 3)")
    p.add_argument("--min-samples", type=int, default=20, help="at least this many samples (default 20)")
    p.add_argument("--replay-ms", type=float, default=None,
                   help="kiln bench's median graph replay (ms) to subtract")
    p.add_argument("--tol", type=float, default=0.0,
                   help="relative L2 bound of the device output against the host output (default 0: "
                        "bit-identical)")
    p.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = p.parse_args(argv)
    if args.calls < 1 or args.min_samples < 1 or args.duration <= 0 or args.warmup < 0 or args.tol < 0:
        p.error("--calls and --min-samples must be >= 1, --duration > 0, --warmup and --tol >= 0")
    if not args.plan.is_file():
        p.error(f"{args.plan}: no such file")
    return args


def fail(message, status=3):
    print(f"sdk_overhead: {message}", file=sys.stderr)
    sys.exit(status)


def import_runtime():
    """torch with a CUDA device, and kiln; a clear message when either is missing."""
    try:
        import torch
    except ImportError:
        fail("torch is not installed")
    if not torch.cuda.is_available():
        fail("no CUDA device (torch.cuda.is_available() is False)")
    try:
        import kiln
    except ImportError as error:
        fail(f"cannot import kiln ({error}); put the built module's folder (build/release/python) on "
             "PYTHONPATH")
    return torch, kiln


def compare(device_out, host_out, tol):
    """Bit equality and the distances of the device output from the host output."""
    import numpy as np
    same_bits = device_out.shape == host_out.shape and np.array_equal(
        device_out.view(np.uint32), host_out.view(np.uint32))
    d = device_out.astype(np.float64) - host_out.astype(np.float64)
    norm = float(np.linalg.norm(host_out.astype(np.float64)))
    rel_l2 = float(np.linalg.norm(d)) / norm if norm > 0 else float(np.linalg.norm(d))
    ok = same_bits if tol == 0 else rel_l2 <= tol
    return {"bit_identical": bool(same_bits), "max_abs_diff": float(np.max(np.abs(d))), "rel_l2": rel_l2,
            "tol": tol, "ok": bool(ok)}


def check_against_host(torch, engine, x, outs, stream, tol):
    engine.run(x, out=outs, stream=stream)
    stream.synchronize()
    device_out = outs[0].cpu().numpy()
    host_out = engine.run(x.cpu().numpy())[0]
    return compare(device_out, host_out, tol)


def time_sample(torch, engine, x, outs, stream, calls):
    """Device ms and host us per call of one sample of back-to-back runs."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(stream)
    begin = time.perf_counter()
    for _ in range(calls):
        engine.run(x, out=outs, stream=stream)
    host_us = (time.perf_counter() - begin) * 1e6 / calls
    stop.record(stream)
    stop.synchronize()
    return start.elapsed_time(stop) / calls, host_us


def time_runs(torch, engine, x, outs, stream, args):
    warmup = time.perf_counter()
    while True:
        time_sample(torch, engine, x, outs, stream, args.calls)
        if time.perf_counter() - warmup >= args.warmup:
            break
    samples = []
    begin = time.perf_counter()
    while time.perf_counter() - begin < args.duration or len(samples) < args.min_samples:
        samples.append(time_sample(torch, engine, x, outs, stream, args.calls))
    return samples


def spread(values, digits):
    return {"median": round(statistics.median(values), digits), "min": round(min(values), digits),
            "max": round(max(values), digits)}


def report(args, torch, kiln, engine, check, samples):
    device_ms = [s[0] for s in samples]
    host_us = [s[1] for s in samples]
    median_ms = statistics.median(device_ms)
    added = None if args.replay_ms is None else (median_ms - args.replay_ms) * 1000.0
    return {
        "plan": str(args.plan), "batch": engine.batch, "kiln": kiln.__version__, "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(),
        "timed_region": f"torch.cuda.Event around {args.calls} back-to-back engine.run(torch tensor, out=, "
                        "stream=current stream) calls",
        "calls_per_sample": args.calls, "samples": len(samples),
        "device_ms_per_call": spread(device_ms, 6), "host_us_per_call": spread(host_us, 3),
        "host_bound": statistics.median(host_us) / 1000.0 >= median_ms,
        "replay_ms": args.replay_ms, "added_us": None if added is None else round(added, 3),
        "target_added_us": TARGET_ADDED_US,
        "within_target": None if added is None else added < TARGET_ADDED_US,
        "check": check,
    }


def main(argv=None):
    args = parse_args(argv)
    torch, kiln = import_runtime()
    engine = kiln.load(str(args.plan), backend="cuda")
    if len(engine.inputs) != 1:
        fail(f"the plan has {len(engine.inputs)} inputs; this script feeds one", 2)
    generator = torch.Generator().manual_seed(42)
    x = torch.randn(tuple(engine.inputs[0]["shape"]), generator=generator, dtype=torch.float32).cuda()
    outs = [torch.empty(tuple(o["shape"]), dtype=torch.float32, device="cuda") for o in engine.outputs]
    stream = torch.cuda.current_stream()
    check = check_against_host(torch, engine, x, outs, stream, args.tol)
    result = report(args, torch, kiln, engine, check, time_runs(torch, engine, x, outs, stream, args))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")
    return 0 if check["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
