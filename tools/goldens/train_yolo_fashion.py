#!/usr/bin/env python3
"""Train a YOLOv10n on a fashion_detect training split with the YOLOv10 authors' code, on the GPU machine.

The network is built from the authors' yolov10n.yaml with the data's 10 classes and trained from scratch
by their ultralytics package (its trainer, augmentation and loss, both heads) for a fixed time budget.
The last epoch's weights (the EMA the trainer keeps; not the best epoch, which is chosen on the
validation set the study then measures on) are written in the Hub layout kiln's yolov10 family loads:
  OUT/model.safetensors  float32, keys `model.model.<layer>...` (both heads), no num_batches_tracked
  OUT/config.json        model, task, imgsz, max_det, names (the data's classes)
  OUT/summary.json       the training settings, epochs run, seconds, and ultralytics' own validation
                         figures for the last weights (its mAP, not COCO's: for context only)

Usage: python3 tools/goldens/train_yolo_fashion.py --peer PATH/TO/yolov10 --train DIR --val DIR --out DIR
       [--minutes 3] [--epochs 300] [--imgsz 320] [--batch 64] [--workers 8] [--seed 0] [--dry-run]
  --train  a fashion_detect set with images/train and labels/train (make_fashion_detection.py --val 0)
  --val    a fashion_detect set with images/val and labels/val (tests/data/fashion_detect)
  --dry-run  check the data and write the dataset yaml, then stop before importing ultralytics
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

# The authors' package loads its own checkpoints (last.pt: pickled modules) with a bare torch.load, which
# torch 2.6 and later refuse by default (weights_only=True); these files are the ones this script writes.
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

NAMES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
         "Ankle boot"]


def count_pairs(root, split):
    """Images of one split and how many have a label file beside them; exits when either is missing."""
    images, labels = root / "images" / split, root / "labels" / split
    if not images.is_dir() or not labels.is_dir():
        sys.exit(f"train_yolo_fashion: {root}: needs images/{split} and labels/{split}")
    files = sorted(p for p in images.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    labelled = sum((labels / (p.stem + ".txt")).is_file() for p in files)
    if not files or labelled != len(files):
        sys.exit(f"train_yolo_fashion: {images}: {len(files)} images, {labelled} with labels")
    return len(files)


def write_dataset_yaml(args):
    """The ultralytics dataset file: absolute train and val folders, the 10 class names."""
    train = count_pairs(args.train, "train")
    val = count_pairs(args.val, "val")
    args.out.mkdir(parents=True, exist_ok=True)
    yaml_path = args.out / "fashion_detect.yaml"
    lines = [f"train: {(args.train / 'images' / 'train').resolve()}\n",
             f"val: {(args.val / 'images' / 'val').resolve()}\n", f"nc: {len(NAMES)}\n", "names:\n"]
    lines += [f"  {i}: {name}\n" for i, name in enumerate(NAMES)]
    yaml_path.write_text("".join(lines))
    return yaml_path, train, val


def import_yolov10(peer):
    sys.path.insert(0, str(Path(peer).resolve()))
    try:
        from ultralytics import YOLOv10
    except ImportError:
        from ultralytics.models.yolov10 import YOLOv10
    work_offline()
    return YOLOv10


def work_offline():
    """The GPU machine has no network. Two checks of the trainer would download files: the AMP check
    compares against a downloaded yolov8n.pt (it is skipped: AMP stays on, as when the check passes on a
    healthy GPU) and the dataset check fetches a font for plots (none are drawn: plots=False)."""
    import ultralytics.data.utils as data_utils
    import ultralytics.engine.trainer as trainer
    trainer.check_amp = lambda model: True
    data_utils.check_font = lambda *args, **kwargs: None
    # Their mAP integrates with np.trapz, which NumPy 2 renamed np.trapezoid.
    import numpy
    if not hasattr(numpy, "trapz"):
        numpy.trapz = numpy.trapezoid


def train(args, yaml_path):
    """Trains for args.minutes (ultralytics' `time`, in hours) or args.epochs, whichever ends first."""
    yolov10 = import_yolov10(args.peer)  # puts the peer on the import path
    from ultralytics.cfg import DEFAULT_CFG_DICT
    model = yolov10("yolov10n.yaml")
    settings = dict(data=str(yaml_path), epochs=args.epochs, imgsz=args.imgsz, batch=args.batch,
                    workers=args.workers, seed=args.seed, device=0, project=str(args.out / "runs"),
                    name="train", exist_ok=True, plots=False, verbose=False, pretrained=False,
                    val=False)  # validate after the last epoch only: the time budget goes to training
    if "time" in DEFAULT_CFG_DICT:
        settings["time"] = args.minutes / 60.0
    start = time.time()
    model.train(**settings)
    return settings, time.time() - start


def export(checkpoint_path, out, imgsz):
    """last.pt's EMA model as model.safetensors + config.json in the Hub layout (make_yolo_goldens.py's)."""
    import torch
    from safetensors.torch import save_file
    checkpoint = torch.load(checkpoint_path, map_location="cpu", weights_only=False)  # pickled modules
    ema = checkpoint.get("ema")  # None once the trainer has stripped the checkpoint: "model" is the EMA
    model = (ema if ema is not None else checkpoint["model"]).float()
    state = {f"model.{k}": v.detach().float().contiguous() for k, v in model.state_dict().items()
             if not k.endswith("num_batches_tracked")}
    save_file(state, str(out / "model.safetensors"))
    names = {str(i): name for i, name in enumerate(NAMES)}
    config = {"model": "yolov10n.yaml", "task": "detect", "imgsz": imgsz, "max_det": 300, "names": names}
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    # A stripped checkpoint's epoch is -1; the trainer's results.csv has one row per epoch run.
    results = checkpoint_path.parent.parent / "results.csv"
    epochs = len(results.read_text().splitlines()) - 1 if results.is_file() else None
    return {"tensors": len(state), "parameters": int(sum(v.numel() for v in state.values())),
            "epochs_run": epochs}


def validate(args, yaml_path, weights):
    """Ultralytics' own validation of the exported weights on the val set (its mAP definition)."""
    yolov10 = import_yolov10(args.peer)
    metrics = yolov10(str(weights)).val(data=str(yaml_path), imgsz=args.imgsz, batch=16, conf=0.001,
                                        plots=False, verbose=False, device=0)
    return {k: float(v) for k, v in metrics.results_dict.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--peer", required=True, help="the YOLOv10 authors' repository (its ultralytics package)")
    p.add_argument("--train", required=True, type=Path)
    p.add_argument("--val", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--minutes", type=float, default=3.0)
    p.add_argument("--epochs", type=int, default=300)
    p.add_argument("--imgsz", type=int, default=320)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args()
    if args.imgsz % 32 != 0 or args.minutes <= 0:
        sys.exit("train_yolo_fashion: --imgsz must be a multiple of 32 and --minutes above 0")
    yaml_path, train_images, val_images = write_dataset_yaml(args)
    summary = {"train_images": train_images, "val_images": val_images, "imgsz": args.imgsz,
               "dataset_yaml": str(yaml_path)}
    if args.dry_run:
        print(json.dumps({"dry_run": True, **summary}), flush=True)
        return
    settings, seconds = train(args, yaml_path)
    weights = args.out / "runs" / "train" / "weights" / "last.pt"
    summary.update(settings=settings, train_seconds=round(seconds, 1), **export(weights, args.out, args.imgsz))
    summary["ultralytics_val_last"] = validate(args, yaml_path, weights)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
