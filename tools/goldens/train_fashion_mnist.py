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
the committed calibration subset, out of training). Their recipe is set for that: many epochs, weight
decay 5e-4 and batch 128, so that a few thousand images still give a few thousand steps.

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
from typing import Any, Dict, List, Tuple

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))  # sibling modules, from any cwd

from golden_io import log, save_weights, versions, write_json
from timm_access import create_eval_transform, import_timm, resolve_data_config, write_config_json

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
    # few thousand images that can travel, epochs are cheap (resnet50 ~0.33 ms, resnest50d ~0.65 ms per
    # image at 224 on the H200; a 112 epoch about a quarter of that), so the models take many epochs,
    # most at 112, the last ones at 224.
    TrainSpec("resnet50_fashion", "resnet50.a1_in1k", {}, size=224, epochs=36, lr=0.1, batch=128,
              weight_decay=5e-4, stages=FULL_SIZE_STAGES, purpose="full-size ResNet-50"),
    TrainSpec("efficientnet_b0_fashion", "efficientnet_b0.ra_in1k", {}, size=224, epochs=36, lr=0.1,
              batch=128, weight_decay=5e-5, stages=FULL_SIZE_STAGES, purpose="full-size EfficientNet-B0"),
    TrainSpec("resnest50d_fashion", "resnest50d.in1k", {}, size=224, epochs=36, lr=0.1, batch=128,
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


def one_cycle(step: int, total: int, peak: float) -> float:
    warm = max(1, int(0.15 * total))
    if step < warm:
        return peak * (step + 1) / warm
    progress = (step - warm) / max(1, total - warm)
    return peak * 0.5 * (1.0 + np.cos(np.pi * progress))


def train(model, spec: TrainSpec, images: np.ndarray, labels: np.ndarray, device, seed: int):
    """Trains in place; returns per-epoch loss and throughput."""
    model.to(device).to(memory_format=torch.channels_last).train()
    decay = [p for n, p in model.named_parameters() if p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]
    optimizer = torch.optim.SGD([dict(params=decay, weight_decay=spec.weight_decay),
                                 dict(params=no_decay, weight_decay=0.0)],
                                lr=spec.lr, momentum=0.9, nesterov=True)
    data = torch.from_numpy(images).to(device)
    target = torch.from_numpy(labels.astype(np.int64)).to(device)
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    steps_per_epoch = len(data) // spec.batch
    epoch_sizes = [side for side, epochs in spec.schedule() for _ in range(epochs)]
    total = steps_per_epoch * len(epoch_sizes)
    history, step = [], 0
    for epoch, side in enumerate(epoch_sizes):
        start, losses = time.time(), []
        order = torch.randperm(len(data), generator=generator, device=device)
        for i in range(steps_per_epoch):
            idx = order[i * spec.batch:(i + 1) * spec.batch]
            for group in optimizer.param_groups:
                group["lr"] = one_cycle(step, total, spec.lr)
            x = gpu_batch(data[idx], side, True, generator)
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                                enabled=device.type == "cuda"):
                loss = F.cross_entropy(model(x), target[idx], label_smoothing=0.1)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)  # no early blow-up at peak lr
            optimizer.step()
            losses.append(loss.detach())
            step += 1
        mean_loss = float(torch.stack(losses).mean())
        seconds = time.time() - start
        history.append(dict(epoch=epoch + 1, side=side, loss=round(mean_loss, 4), seconds=round(seconds, 1),
                            images_per_second=round(steps_per_epoch * spec.batch / seconds)))
        log(f"  {spec.name} epoch {epoch + 1}/{len(epoch_sizes)} at {side}: loss {mean_loss:.4f}, "
            f"{seconds:.1f} s")
    return history


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
    history = train(model, spec, train_x, train_y, args.device, args.seed)
    train_seconds = time.time() - start
    top1, predictions, transform = timm_top1(timm, model, test_x, test_y, args.device, args.workers)
    log(f"{spec.name}: timm top-1 {100 * top1:.2f}% on {len(test_y)} test images "
        f"(trained {train_seconds:.0f} s)")
    folder = args.out / spec.name
    saved = save_model(model.cpu(), spec, folder)
    np.save(folder / "test_top1.npy", predictions.astype(np.int16))
    record = dict(name=spec.name, timm_name=spec.timm_name, overrides=spec.overrides, size=spec.size,
                  epochs=spec.epochs, stages=spec.schedule(), train_images=int(len(train_y)),
                  train_skip=args.train_skip, lr=spec.lr, batch=spec.batch, weight_decay=spec.weight_decay,
                  seed=args.seed, deterministic=bool(torch.backends.cudnn.deterministic),
                  purpose=spec.purpose, train_seconds=round(train_seconds, 1), history=history,
                  timm_test_top1=top1, test_images=int(len(test_y)), eval_transform=transform, **saved)
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
