#!/usr/bin/env python3
"""Make full-size YOLOv10 goldens with the YOLOv10 authors' code (their ultralytics package), on the GPU machine.

For each model (yolov10n, yolov10s, ...): the network built from the authors' yaml with 80 classes and a fixed
seed, random batch-norm affine parameters (weight in [0.5, 1.5], bias with std 0.2), batch-norm statistics
re-estimated on the letterboxed photos, then written in the Hub layout kiln's yolov10 family reads:
  OUT/yolov10X/model.safetensors  float32, keys `model.model.<layer>...` (both heads), no num_batches_tracked
  OUT/yolov10X/config.json        model, task, imgsz, max_det, names (the 80 COCO classes)
  OUT/yolov10X/input_u8.npy       uint8 (B, 3, S, S) RGB: the photos letterboxed by the authors' LetterBox
  OUT/yolov10X/one2one.npy        float32 (B, 4 + 80, anchors): the decoded one-to-one head before top-k,
                                  computed in float64 on the CPU (boxes as centre x, y, width, height)
  OUT/yolov10X/detections.npy     float64 (B, max_det, 6): x1, y1, x2, y2 (input pixels), score, label from the
                                  authors' two-stage top-k (their exported head: v10postprocess), in float64
The network's input is input_u8 / 255 in float32.
With --checkpoint DIR (a trained checkpoint in that layout, e.g. tools/device/yolo_train.sh's), its weights,
class names and input size are used instead of a random network, and OUT/yolov10n holds its copy.

Usage: python3 tools/goldens/make_yolo_goldens.py --peer PATH/TO/yolov10 --photos DIR --out DIR
       [--models n,s] [--photo-names dog.jpg,horses.jpg] [--seed 11] [--imgsz 640] [--checkpoint DIR]
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden_io import load_weights  # noqa: E402



def letterbox_photos(letterbox_cls, photos, size):
    import cv2
    rows = []
    for path in photos:
        bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if bgr is None:
            sys.exit(f"make_yolo_goldens: cannot read {path}")
        boxed = letterbox_cls(new_shape=(size, size), auto=False)(image=bgr)
        rows.append(boxed[:, :, ::-1].transpose(2, 0, 1))  # BGR HWC -> RGB CHW
    return np.ascontiguousarray(np.stack(rows)).astype(np.uint8)


def randomize_batch_norms(model, generator):
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            with torch.no_grad():
                m.weight.copy_(torch.rand(m.weight.shape, generator=generator) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=generator) * 0.2)


def reestimate_batch_norms(model, x):
    # Cumulative averages over one pass (momentum None) give each BN the statistics of these images.
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        model(x)
    model.eval()


def one2one_head(model, x):
    out = model(x)
    head = out["one2one"] if isinstance(out, dict) else out
    return head[0] if isinstance(head, (tuple, list)) else head


def detections(model, x, max_det):
    """The authors' exported head: corner boxes and their two-stage top-k (ops.v10postprocess), no NMS."""
    head = model.model[-1]
    head.export, head.max_det, head.format = True, max_det, None  # format: set by the authors' exporter
    try:
        return model(x)
    finally:
        head.export = False


def coco_names(peer):
    import yaml
    with open(Path(peer) / "ultralytics" / "cfg" / "datasets" / "coco.yaml") as f:
        names = yaml.safe_load(f)["names"]
    return {str(k): v for k, v in names.items()}


def trained_model(checkpoint):
    """The authors' network with a trained checkpoint's weights, its class names and input size."""
    from ultralytics.nn.tasks import YOLOv10DetectionModel
    config = json.loads((Path(checkpoint) / "config.json").read_text())
    model = YOLOv10DetectionModel(config["model"], nc=len(config["names"]), verbose=False)
    weights = load_weights(Path(checkpoint) / "model.safetensors")
    state = {k[len("model."):]: v.float() for k, v in weights.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if not k.endswith("num_batches_tracked")]:
        sys.exit(f"make_yolo_goldens: {checkpoint}: keys missing {missing[:5]}, unexpected {unexpected[:5]}")
    return model.eval(), config


def make_one(name, args, photos, names):
    from safetensors.torch import save_file
    from ultralytics.data.augment import LetterBox
    from ultralytics.nn.tasks import YOLOv10DetectionModel

    torch.manual_seed(args.seed)
    model = YOLOv10DetectionModel(f"yolov10{name}.yaml", nc=80, verbose=False)
    randomize_batch_norms(model, torch.Generator().manual_seed(args.seed + 1))
    u8 = letterbox_photos(LetterBox, photos, args.imgsz)
    x = torch.from_numpy(u8).float() / 255
    reestimate_batch_norms(model, x)

    out = Path(args.out) / f"yolov10{name}"
    out.mkdir(parents=True, exist_ok=True)
    state = {f"model.{k}": v.detach().float().contiguous() for k, v in model.state_dict().items()
             if not k.endswith("num_batches_tracked")}
    save_file(state, str(out / "model.safetensors"))
    config = {"model": f"yolov10{name}.yaml", "task": "detect", "imgsz": args.imgsz, "max_det": 300,
              "names": names}
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    np.save(out / "input_u8.npy", u8)
    with torch.no_grad():
        head = one2one_head(model.double(), x.double())
        boxes = detections(model, x.double(), 300)
    np.save(out / "one2one.npy", head.numpy().astype(np.float32))
    np.save(out / "detections.npy", boxes.numpy())
    print(json.dumps({"model": f"yolov10{name}", "tensors": len(state),
                      "parameters": int(sum(v.numel() for v in state.values())),
                      "one2one": list(head.shape), "seed": args.seed}), flush=True)


def make_from_checkpoint(args, photos):
    """Goldens of a trained checkpoint: its files copied, the photos letterboxed to its input size, and the
    authors' float64 one-to-one head and detections on them."""
    import shutil
    from ultralytics.data.augment import LetterBox
    model, config = trained_model(args.checkpoint)
    out = Path(args.out) / Path(config["model"]).stem
    out.mkdir(parents=True, exist_ok=True)
    for name in ("model.safetensors", "config.json"):
        shutil.copyfile(Path(args.checkpoint) / name, out / name)
    u8 = letterbox_photos(LetterBox, photos, config["imgsz"])
    np.save(out / "input_u8.npy", u8)
    x = torch.from_numpy(u8).double() / 255
    with torch.no_grad():
        head = one2one_head(model.double(), x)
        boxes = detections(model, x, config["max_det"])
    np.save(out / "one2one.npy", head.numpy().astype(np.float32))
    np.save(out / "detections.npy", boxes.numpy())
    print(json.dumps({"model": str(out.name), "checkpoint": str(args.checkpoint), "one2one": list(head.shape),
                      "detections": list(boxes.shape)}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--peer", required=True, help="the YOLOv10 authors' repository (its ultralytics package)")
    p.add_argument("--photos", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--models", default="n,s")
    p.add_argument("--photo-names", default="dog.jpg,horses.jpg")
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--imgsz", type=int, default=640)
    p.add_argument("--checkpoint", type=Path, help="a trained checkpoint's folder instead of random networks")
    args = p.parse_args()
    sys.path.insert(0, str(Path(args.peer).resolve()))
    torch.set_grad_enabled(False)
    photos = [args.photos / n for n in args.photo_names.split(",")]
    if args.checkpoint:
        make_from_checkpoint(args, photos)
        return
    names = coco_names(args.peer)
    for name in args.models.split(","):
        make_one(name, args, photos, names)


if __name__ == "__main__":
    main()
