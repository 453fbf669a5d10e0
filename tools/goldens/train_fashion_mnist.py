#!/usr/bin/env python3
"""Train timm classifiers on Fashion-MNIST, the labelled set kiln's studies measure accuracy on.

Every model is built by timm.create_model with 10 classes and trained from scratch, seeded. The
checkpoint is written in the Hub layout kiln loads (model.safetensors + config.json by timm's own
exporter), and config.json's preprocessing is the one training used:

  * input_size 3 x S x S, interpolation bilinear, crop_pct 1.0: timm's eval transform resizes the
    28 x 28 grey item to S x S (shorter side to S, then a centre crop that removes nothing);
  * mean / std: the Fashion-MNIST training set's pixel mean and standard deviation, for all three
    channels (a grey image becomes RGB by repeating its channel, as PIL's convert('RGB') does).

Training resizes on the GPU with torch's bilinear interpolation (half-pixel centres, as PIL's
bilinear filter for enlarging), from float pixels; timm's eval transform rounds the resized image
to 8 bits first. The recorded top-1 is timm's own: the eval transform on PIL images of the whole
10k test set, the model in float32.

Augmentation: a random shift of up to 2 pixels (zero padding) and a horizontal flip, on the 28 x 28
item. Optimiser: SGD with Nesterov momentum, one-cycle schedule (linear warm-up over the first 15%
of steps, cosine decay), label smoothing 0.1, bf16 autocast, channels-last.

Progressive resizing (the full-size models): a model may train in stages of (side, epochs), e.g. most
epochs at 112 x 112 and the last ones at 224 x 224, the side it is evaluated at. The early stages cost
about a quarter of a 224 epoch each; the last stage adapts the network (and its batch-norm statistics)
to the evaluation side, which config.json states. One one-cycle schedule spans all stages.

Few training images: what can travel to the GPU machine is limited, so the full-size models are meant
to train on a subset (--train-skip 500 --train-limit N: images 500 .. 500+N-1, keeping the first 500,
the committed calibration subset, out of training). Their recipe is set for that: many epochs and
weight decay 5e-4.

A time budget (--max-seconds S, for a GPU call of fixed length): before the schedule is fixed, a few
steps are timed at every side of the stages, after cuDNN's benchmark warm-up there (the weights and
statistics are put back afterwards), and the stages are scaled down to fit S if they do not
(train_budget.py); after every epoch the epochs still to come are refitted from the measured epoch
times. The one-cycle schedule spans the fitted epochs, so the learning rate still ends at ~0 on the
last epoch, at the evaluation side. If the budget runs out all the same, training stops at that step
and the checkpoint is saved; train.json's `budget` says what was planned, what ran and whether it was
cut, and the seconds per epoch measured at each side.

Reproducibility: the seed fixes weights, data order and augmentation; --deterministic also makes
cuDNN pick deterministic kernels (used for the small models that are committed). Without it GPU
kernels may sum in different orders from run to run, which moves the final top-1 by a few tenths
of a point.

Writes OUT/<name>/{model.safetensors, config.json, train.json} and OUT/summary.json.
"""
import argparse
import gzip
import json
import lzma
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))  # sibling modules, from any cwd

from golden_io import log, save_weights, versions, write_json
from timm_access import create_eval_transform, import_timm, resolve_data_config, write_config_json
from train_budget import BudgetedSchedule

CLASS_NAMES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
               "Bag", "Ankle boot"]

# Fashion-MNIST training-set pixel statistics (over all 60000 x 28 x 28 pixels, scaled to [0, 1]);
# recomputed by the script and checked against these to 1e-3, so a different file is noticed.
FASHION_MEAN = 0.2860
FASHION_STD = 0.3530


@dataclass
class TrainSpec:
    """One model to train: timm entrypoint, structure overrides, input side and schedule."""
    name: str
    timm_name: str
    overrides: Dict[str, Any]
    size: int
    epochs: int
    lr: float
    batch: int = 256
    weight_decay: float = 5e-5
    reduced: bool = False
    purpose: str = ""
    # (side, epochs) per training stage, the last at `size`; empty: all `epochs` at `size`.
    stages: List[Tuple[int, int]] = field(default_factory=list)

    def schedule(self) -> List[Tuple[int, int]]:
        stages = self.stages or [(self.size, self.epochs)]
        if stages[-1][0] != self.size:
            raise SystemExit(f"{self.name}: the last training stage must be at the evaluation side {self.size}")
        return stages


# The full-size models' stages: 30 epochs at 112 x 112, then 6 at 224 x 224 (the evaluation side).
FULL_SIZE_STAGES = [(112, 30), (224, 6)]

# Reduced models: the layouts of tests/data/golden's tiny models (make_timm_goldens.py), a little
# wider so they learn the task, at 32 x 32 so a 2-core CPU evaluates thousands of images in seconds.
SPECS: List[TrainSpec] = [
    TrainSpec("resnest_fashion_tiny", "resnest50d.in1k",
              dict(stem_type="deep", avg_down=True, base_width=64, cardinality=1,
                   block_args=dict(radix=2, avd=True, avd_first=False), layers=[2, 1, 1, 1],
                   stem_width=16, channels=(16, 32, 64, 128)),
              size=32, epochs=8, lr=0.2, reduced=True,
              purpose="ResNeSt-50d layout (radix 2, avd, deep stem), shrunk; the CPU demo's model"),
    TrainSpec("resnet_fashion_tiny", "resnet50.a1_in1k",
              dict(layers=[2, 1, 1, 1], channels=(16, 32, 64, 128)),
              size=32, epochs=8, lr=0.2, reduced=True, purpose="ResNet-50 layout, shrunk"),
    TrainSpec("efficientnet_fashion_tiny", "efficientnet_b0.ra_in1k",
              dict(channel_multiplier=0.5, depth_multiplier=0.5),
              size=32, epochs=8, lr=0.2, reduced=True, purpose="EfficientNet-B0 layout, scaled"),
    # Full size: 3 epochs at 224 on 45k images left resnet50 at 85.1% and resnest50d at 89.4%. On the
    # ~20k images that can travel, epochs are cheap (resnet50 ~0.33 ms, resnest50d ~0.65 ms per image
    # at 224 on the H200), so the models take many epochs, most at 112, the last ones at 224.
    # Batch 512: at batch 128 a resnest50d step at 112 took ~50 ms, far more than its arithmetic: the
    # host, launching the step's kernels one by one, set the pace (7-9 s per 112 epoch on 20.5k
    # images). At 512 the same launches do 4x the work in 4x fewer steps. The learning rate scales
    # linearly with the batch (0.1 at 128 -> 0.4 at 512, Goyal et al. 2017), the one-cycle warm-up
    # (15% of the steps) being the gradual warm-up that rule needs; gradient clipping guards the peak.
    TrainSpec("resnet50_fashion", "resnet50.a1_in1k", {}, size=224, epochs=36, lr=0.4, batch=512,
              weight_decay=5e-4, stages=FULL_SIZE_STAGES, purpose="full-size ResNet-50"),
    TrainSpec("efficientnet_b0_fashion", "efficientnet_b0.ra_in1k", {}, size=224, epochs=36, lr=0.4,
              batch=512, weight_decay=5e-5, stages=FULL_SIZE_STAGES, purpose="full-size EfficientNet-B0"),
    TrainSpec("resnest50d_fashion", "resnest50d.in1k", {}, size=224, epochs=36, lr=0.4, batch=512,
              weight_decay=5e-4, stages=FULL_SIZE_STAGES, purpose="full-size ResNeSt-50d"),
]


def read_idx(path: Path) -> np.ndarray:
    """An IDX file (raw, .gz or .xz) as a uint8 array: [N, rows, cols] images or [N] labels."""
    opener = {".gz": gzip.open, ".xz": lzma.open}.get(path.suffix, open)
    with opener(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    dims = magic & 0xFF
    if magic >> 8 != 0x08 or dims not in (1, 3):
        raise SystemExit(f"{path}: not an IDX file of uint8 (magic {magic:#010x})")
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims)
    if body.size != int(np.prod(shape)):
        raise SystemExit(f"{path}: header says {shape}, file holds {body.size} bytes of data")
    return body.reshape(shape)


def find_idx(data_dir: Path, stem: str) -> Path:
    for suffix in (".gz", ".xz", ""):
        if (data_dir / (stem + suffix)).is_file():
            return data_dir / (stem + suffix)
    raise SystemExit(f"{data_dir}: no {stem}(.gz|.xz)")


def load_split(data_dir: Path, split: str) -> Tuple[np.ndarray, np.ndarray]:
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(find_idx(data_dir, f"{prefix}-images-idx3-ubyte"))
    labels = read_idx(find_idx(data_dir, f"{prefix}-labels-idx1-ubyte"))
    if len(images) != len(labels):
        raise SystemExit(f"{data_dir}: {len(images)} {split} images but {len(labels)} labels")
    return images, labels


def check_statistics(train_images: np.ndarray) -> None:
    pixels = train_images.astype(np.float64) / 255.0
    mean, std = float(pixels.mean()), float(pixels.std())
    log(f"training pixels ({len(train_images)} images): mean {mean:.4f}, std {std:.4f}")
    # A subset's statistics wander from the whole set's; 5e-3 still tells another data set apart.
    tolerance = 1e-3 if len(train_images) == 60000 else 5e-3
    if abs(mean - FASHION_MEAN) > tolerance or abs(std - FASHION_STD) > tolerance:
        raise SystemExit(f"training pixel statistics {mean:.4f} / {std:.4f} are not Fashion-MNIST's "
                         f"{FASHION_MEAN} / {FASHION_STD}: another data set?")


def fashion_pretrained_cfg(model, size: int) -> Dict[str, Any]:
    """The model's pretrained_cfg with the preprocessing training uses."""
    cfg = dict(getattr(model, "pretrained_cfg", {}) or {})
    cfg.update(input_size=(3, size, size), interpolation="bilinear", crop_pct=1.0, crop_mode="center",
               mean=(FASHION_MEAN,) * 3, std=(FASHION_STD,) * 3, num_classes=10,
               pool_size=None, test_input_size=None, tag="fashion_mnist")
    return {k: v for k, v in cfg.items() if v is not None or k == "pool_size"}


def create_model(timm, spec: TrainSpec, seed: int):
    torch.manual_seed(seed)
    kwargs = dict(spec.overrides, num_classes=10)
    if "channel_multiplier" in kwargs:  # timm's b0 entrypoint fixes the multipliers
        from timm.models import efficientnet  # noqa: WPS433
        model = efficientnet._gen_efficientnet(spec.timm_name.split(".")[0], pretrained=False, **kwargs)
    else:
        model = timm.create_model(spec.timm_name, pretrained=False, **kwargs)
    model.pretrained_cfg = fashion_pretrained_cfg(model, spec.size)
    model.default_cfg = model.pretrained_cfg
    return model


def gpu_batch(images_u8: torch.Tensor, size: int, augment: bool, generator: torch.Generator):
    """uint8 [B, 28, 28] on the device -> normalised float [B, 3, size, size], channels-last."""
    x = images_u8.unsqueeze(1).float().div_(255.0)
    if augment:
        b = x.shape[0]
        shifts = torch.randint(-2, 3, (b, 2), generator=generator, device=x.device)
        padded = F.pad(x, (2, 2, 2, 2))
        rows = (torch.arange(28, device=x.device).view(1, 28) + 2 + shifts[:, :1]).view(b, 1, 28, 1)
        cols = (torch.arange(28, device=x.device).view(1, 28) + 2 + shifts[:, 1:]).view(b, 1, 1, 28)
        x = padded.gather(2, rows.expand(b, 1, 28, 32)).gather(3, cols.expand(b, 1, 28, 28))
        flip = torch.rand(b, generator=generator, device=x.device) < 0.5
        x = torch.where(flip.view(b, 1, 1, 1), x.flip(3), x)
    if size != 28:
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    x = (x - FASHION_MEAN) / FASHION_STD
    return x.expand(-1, 3, -1, -1).contiguous(memory_format=torch.channels_last)


def make_optimizer(model, spec: TrainSpec, lr: float):
    """SGD with Nesterov momentum, no weight decay on biases and norm weights. On CUDA torch's SGD
    updates all parameters with a few multi-tensor (foreach) kernels, not one launch per tensor."""
    decay = [p for n, p in model.named_parameters() if p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]
    return torch.optim.SGD([dict(params=decay, weight_decay=spec.weight_decay),
                            dict(params=no_decay, weight_decay=0.0)], lr=lr, momentum=0.9, nesterov=True)


def train_step(model, optimizer, images_u8, target, side: int, lr: float, micro: int, generator):
    """One optimiser step; returns the loss, left on the device (no host synchronisation in a step).
    micro > 1 splits the batch into micro-batches whose gradients add up, for a side where the whole
    batch does not fit in memory."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.zero_grad(set_to_none=True)
    device, losses = images_u8.device, []
    for part_u8, part_target in zip(images_u8.chunk(micro), target.chunk(micro)):
        x = gpu_batch(part_u8, side, True, generator)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = F.cross_entropy(model(x), part_target, label_smoothing=0.1)
        (loss if micro == 1 else loss / micro).backward()
        losses.append(loss.detach())
    # The norm stays on the device (foreach kernels, torch's default on CUDA); error_if_nonfinite would
    # read it back every step.
    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)  # no early blow-up at peak lr
    optimizer.step()
    return losses[0] if micro == 1 else torch.stack(losses).mean()


def synchronize(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# Probe steps per side: the first runs cuDNN's benchmark for every convolution shape (seconds), the
# others let the allocator and clocks settle; then the timed ones.
WARMUP_STEPS, TIMED_STEPS = 3, 6


def time_steps(model, optimizer, data, target, spec: TrainSpec, side: int, micro: int, generator):
    """(seconds per step, seconds of warm-up) at one side."""
    def step():
        idx = torch.randint(len(data), (spec.batch,), generator=generator, device=data.device)
        train_step(model, optimizer, data[idx], target[idx], side, 0.0, micro, generator)

    start = time.monotonic()
    for _ in range(WARMUP_STEPS):
        step()
    synchronize(data.device)
    warm_up, start = time.monotonic() - start, time.monotonic()
    for _ in range(TIMED_STEPS):
        step()
    synchronize(data.device)
    return (time.monotonic() - start) / TIMED_STEPS, warm_up


def probe_sides(model, spec: TrainSpec, data, target, seed: int) -> Dict[int, Dict[str, float]]:
    """Per side of the stages: seconds per step after cuDNN's warm-up there, the warm-up's seconds and
    the micro-batches a step needs to fit in memory (halved until it fits). The probe steps run at
    learning rate 0, with their own optimiser and random stream, and the weights and batch-norm
    statistics are put back afterwards: training starts where it would have without them."""
    saved = {k: v.detach().clone() for k, v in model.state_dict().items()}
    optimizer = make_optimizer(model, spec, 0.0)
    generator = torch.Generator(device=data.device)
    generator.manual_seed(seed + 1)
    probes: Dict[int, Dict[str, float]] = {}
    for side in dict.fromkeys(side for side, _ in spec.schedule()):
        micro = 1
        while side not in probes:
            out_of_memory = False
            try:
                per_step, warm_up = time_steps(model, optimizer, data, target, spec, side, micro, generator)
                probes[side] = dict(seconds_per_step=per_step, warmup_seconds=warm_up, micro_batches=micro)
            except torch.cuda.OutOfMemoryError:
                if spec.batch // micro <= 32:
                    raise
                out_of_memory = True
            if out_of_memory:  # outside the handler, so the failed step's tensors are freed first
                optimizer.zero_grad(set_to_none=True)
                torch.cuda.empty_cache()
                micro *= 2
                log(f"  {spec.name}: batch {spec.batch} at {side} does not fit; {micro} micro-batches")
    model.load_state_dict(saved)
    return probes


def train(model, spec: TrainSpec, images: np.ndarray, labels: np.ndarray, device, seed: int,
          max_seconds: Optional[float] = None):
    """Trains in place, within max_seconds if given (counted from here: moving the model to the device
    and the probe included). Returns the per-epoch history and the budget record (None without one)."""
    steps_per_epoch = len(images) // spec.batch
    if steps_per_epoch == 0:
        raise SystemExit(f"{spec.name}: {len(images)} training images, fewer than one batch of {spec.batch}")
    schedule = BudgetedSchedule(spec.schedule(), steps_per_epoch, spec.lr, max_seconds)
    model.to(device).to(memory_format=torch.channels_last).train()
    data = torch.from_numpy(images).to(device)
    target = torch.from_numpy(labels.astype(np.int64)).to(device)
    probes = {side: dict(micro_batches=1) for side, _ in spec.schedule()}
    if max_seconds is not None:
        probes = probe_sides(model, spec, data, target, seed)
        plan = schedule.fit({side: p["seconds_per_step"] * steps_per_epoch for side, p in probes.items()})
        for side, p in probes.items():
            log(f"  {spec.name} at {side}: {1000 * p['seconds_per_step']:.1f} ms per step of {spec.batch} "
                f"({p['seconds_per_step'] * steps_per_epoch:.1f} s per epoch), warm-up "
                f"{p['warmup_seconds']:.1f} s, {p['micro_batches']} micro-batch(es)")
        log(f"  {spec.name}: budget {max_seconds:.0f} s, {schedule.seconds_left():.0f} s left after the "
            f"probe: stages {plan} (requested {spec.schedule()})")
    optimizer = make_optimizer(model, spec, spec.lr)
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    history, step, epoch = [], 0, 0
    while epoch < schedule.total_epochs():
        side, start, losses = schedule.side(epoch), time.monotonic(), []
        order = torch.randperm(len(data), generator=generator, device=device)
        for i in range(steps_per_epoch):
            if schedule.out_of_time(step):
                break
            idx = order[i * spec.batch:(i + 1) * spec.batch]
            losses.append(train_step(model, optimizer, data[idx], target[idx], side, schedule.lr(step),
                                     probes[side]["micro_batches"], generator))
            step += 1
        if not losses:
            break
        mean_loss = float(torch.stack(losses).mean())  # the epoch's one host synchronisation
        seconds = time.monotonic() - start
        history.append(dict(epoch=epoch + 1, side=side, loss=round(mean_loss, 4), seconds=round(seconds, 1),
                            steps=len(losses), images_per_second=round(len(losses) * spec.batch / seconds)))
        log(f"  {spec.name} epoch {epoch + 1}/{schedule.total_epochs()} at {side}: loss {mean_loss:.4f}, "
            f"{seconds:.1f} s" + (f" (cut after {len(losses)} of {steps_per_epoch} steps: budget spent)"
                                  if len(losses) < steps_per_epoch else ""))
        if len(losses) < steps_per_epoch:
            break
        epoch += 1
        schedule.epoch_done(epoch, side, seconds)
    synchronize(device)
    if max_seconds is None:
        return history, None
    probe = {str(side): {k: round(v, 4) for k, v in p.items()} for side, p in probes.items()}
    return history, dict(schedule.record(epoch, step), batch=spec.batch, steps_per_epoch=steps_per_epoch,
                         probe=probe)


class PilTestSet(torch.utils.data.Dataset):
    """The test images as PIL RGB images through timm's eval transform."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, transform):
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        from PIL import Image  # noqa: WPS433 - workers import it themselves
        return self.transform(Image.fromarray(self.images[i], mode="L").convert("RGB")), int(self.labels[i])


def timm_top1(timm, model, images: np.ndarray, labels: np.ndarray, device, workers: int):
    """Top-1 on the test set as timm computes it: eval transform on PIL images, float32."""
    transform = create_eval_transform(timm, resolve_data_config(timm, model=model))
    loader = torch.utils.data.DataLoader(PilTestSet(images, labels, transform), batch_size=500,
                                         num_workers=workers)
    model.eval().float()
    # True float32: PyTorch lets cuDNN convolutions use TF32 (10-bit mantissa) by default, whose ~1e-3
    # relative error flips the top-1 of images whose two best logits nearly tie.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    # cuDNN's heuristic choice: benchmarking every float32 shape would cost more than these 20 batches.
    torch.backends.cudnn.benchmark = False
    correct, seen, predictions = 0, 0, []
    with torch.no_grad():
        for x, y in loader:
            x = x.to(device).contiguous(memory_format=torch.channels_last)
            top1 = model(x).argmax(1).cpu()
            correct += int((top1 == y).sum())
            seen += len(y)
            predictions.append(top1.numpy())
    return correct / seen, np.concatenate(predictions), str(transform)


def save_model(model, spec: TrainSpec, folder: Path) -> Dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().float().cpu().contiguous() for k, v in model.state_dict().items()
             if not k.endswith("num_batches_tracked")}
    writer = save_weights(state, folder / "model.safetensors")
    config = write_config_json(model, folder / "config.json")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["label_names"] = CLASS_NAMES
    write_json(folder / "config.json", cfg)
    return dict(weights_writer=writer, config=config)


def run_one(timm, spec: TrainSpec, data, args) -> Dict[str, Any]:
    (train_x, train_y), (test_x, test_y) = data
    torch.backends.cudnn.deterministic = args.deterministic or spec.reduced
    torch.backends.cudnn.benchmark = not torch.backends.cudnn.deterministic
    model = create_model(timm, spec, args.seed)
    log(f"{spec.name}: {spec.timm_name} {spec.overrides or '(full size)'}, "
        f"{sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters, {spec.size}x{spec.size}")
    start = time.time()
    history, budget = train(model, spec, train_x, train_y, args.device, args.seed, args.max_seconds)
    train_seconds = time.time() - start
    if budget:
        log(f"{spec.name}: budget {budget['max_seconds']:.0f} s: {budget['done_epochs']} of "
            f"{budget['planned_epochs']} planned epochs done ({budget['done_stages']}; requested "
            f"{budget['requested_stages']}), " + ("CUT: the budget ran out" if budget["cut"] else "not cut")
            + (f", last lr {budget['final_lr']:.2g}" if budget["final_lr"] is not None else ", no step"))
    # The checkpoint first: a call that runs out of time in the evaluation still has it.
    folder = args.out / spec.name
    saved = save_model(model, spec, folder)
    top1, predictions, transform = timm_top1(timm, model, test_x, test_y, args.device, args.workers)
    log(f"{spec.name}: timm top-1 {100 * top1:.2f}% on {len(test_y)} test images "
        f"(trained {train_seconds:.0f} s)")
    np.save(folder / "test_top1.npy", predictions.astype(np.int16))
    stages = budget["done_stages"] if budget else spec.schedule()
    record = dict(name=spec.name, timm_name=spec.timm_name, overrides=spec.overrides, size=spec.size,
                  epochs=sum(epochs for _, epochs in stages), stages=stages, train_images=int(len(train_y)),
                  train_skip=args.train_skip, lr=spec.lr, batch=spec.batch, weight_decay=spec.weight_decay,
                  seed=args.seed, deterministic=bool(torch.backends.cudnn.deterministic),
                  purpose=spec.purpose, train_seconds=round(train_seconds, 1), history=history,
                  timm_test_top1=top1, test_images=int(len(test_y)), eval_transform=transform, **saved)
    if budget:
        record["budget"] = budget
    write_json(folder / "train.json", record)
    return record


def write_shard(images: np.ndarray, labels: np.ndarray, path: Path) -> None:
    """Images as one webdataset shard (KEY.png + KEY.cls), for kiln on the GPU machine."""
    import io  # noqa: WPS433
    import tarfile  # noqa: WPS433
    from PIL import Image  # noqa: WPS433
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tar:
        for i, (image, label) in enumerate(zip(images, labels)):
            for suffix, payload in (("png", None), ("cls", str(int(label)).encode())):
                if payload is None:
                    buffer = io.BytesIO()
                    Image.fromarray(image, mode="L").save(buffer, format="PNG")
                    payload = buffer.getvalue()
                info = tarfile.TarInfo(f"{i:06d}.{suffix}")
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
    log(f"wrote {path}: {len(images)} images")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/usr/share/datasets/fashion-mnist"),
                        help="folder with the four Fashion-MNIST IDX .gz files")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--models", nargs="*", default=[s.name for s in SPECS],
                        help="which of: " + ", ".join(s.name for s in SPECS))
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--workers", type=int, default=8, help="data loader workers for the eval")
    parser.add_argument("--deterministic", action="store_true",
                        help="deterministic cuDNN kernels for the full-size models too (slower)")
    parser.add_argument("--epochs", type=int,
                        help="override every model's epochs (smoke runs): all of them at its evaluation side")
    parser.add_argument("--stages", help="override the full-size models' stages: SIDE:EPOCHS,... (last at 224)")
    parser.add_argument("--max-seconds", type=float,
                        help="training budget per model, in seconds (evaluation and saving come after it): "
                             "the stages are fitted to it from timed steps, and training stops and saves "
                             "when it runs out")
    parser.add_argument("--train-skip", type=int, default=0,
                        help="leave out the first N training images (500: the committed calibration subset)")
    parser.add_argument("--train-limit", type=int, help="use only N training images (after --train-skip)")
    parser.add_argument("--test-shard", type=Path, help="also write the test set as a webdataset tar")
    parser.add_argument("--calib-shard", type=Path,
                        help="also write the first 500 training images as a webdataset tar")
    args = parser.parse_args()
    unknown = sorted(set(args.models) - {s.name for s in SPECS})
    if unknown:
        parser.error(f"unknown models {unknown}")
    args.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    timm = import_timm()
    train_x, train_y = load_split(args.data, "train")
    end = args.train_skip + args.train_limit if args.train_limit else len(train_x)
    if end > len(train_x):
        raise SystemExit(f"{args.data}: {len(train_x)} training images, fewer than --train-skip + --train-limit")
    train_x, train_y = train_x[args.train_skip:end], train_y[args.train_skip:end]
    check_statistics(train_x)
    data = ((train_x, train_y), load_split(args.data, "test"))
    if args.test_shard:
        write_shard(*data[1], args.test_shard)
    if args.calib_shard:
        write_shard(train_x[:500], train_y[:500], args.calib_shard)
    records = []
    for spec in SPECS:
        if spec.name in args.models:
            if args.epochs:
                spec.epochs, spec.stages = args.epochs, []
            elif args.stages and not spec.reduced:
                spec.stages = [tuple(int(n) for n in stage.split(":")) for stage in args.stages.split(",")]
                spec.epochs = sum(epochs for _, epochs in spec.stages)
            records.append(run_one(timm, spec, data, args))
            write_json(args.out / "summary.json", dict(versions=versions(), models=records))
    for r in records:
        log(f"{r['name']}: top-1 {100 * r['timm_test_top1']:.2f}%, {r['train_seconds']} s")


if __name__ == "__main__":
    main()
