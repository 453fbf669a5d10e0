#!/usr/bin/env bash
# Rebuilds the seed corpora under tests/fuzz/corpus/<target>/ from the repo's own test data and from
# files kiln_fuzz_seeds writes (a small plan, checkpoint, array and tiny images). The seeds are
# committed; run this after a format changes. Usage: tests/fuzz/make_corpus.sh (after tools/fuzz.sh
# --runs 0 has built the fuzz preset).
set -euo pipefail
cd "$(dirname "$0")/../.."
corpus=tests/fuzz/corpus
seeds=build/fuzz/tests/fuzz/kiln_fuzz_seeds
[[ -x $seeds ]] || { echo "make_corpus: build the fuzz preset first ($seeds missing)" >&2; exit 1; }

find "$corpus" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +  # keeps the .dict files
mkdir -p "$corpus"
"$seeds" "$corpus"

copy() {  # copy TARGET FILE...
  local target=$1; shift
  mkdir -p "$corpus/$target"
  for file in "$@"; do cp "$file" "$corpus/$target/$(echo "$file" | tr / _)"; done
}
copy npy tests/data/golden/resnet_tiny/logits.npy
copy manifest families/*/manifest.toml
copy timm_config tests/data/golden/*/config.json
copy yolo_config tests/data/golden/yolov10n/config.json
copy calibration_cache tests/data/golden/resnet_tiny/fp8_calibration.json
copy yolo_labels tests/data/fashion_detect/data.yaml tests/data/fashion_detect/labels/val/val_00000[0-2].txt

python3 - "$corpus" <<'PY'
import io, json, struct, sys, tarfile
corpus = sys.argv[1]

def write(path, data):
    import os
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())

# The plan's header alone (the plan_header target frames it as a file).
plan = open(f"{corpus}/plan_file/small.kplan", "rb").read()
header_size = struct.unpack_from("<Q", plan, 16)[0]
write(f"{corpus}/plan_header/small.json", plan[24:24 + header_size])

# Webdataset shards: ustar, a GNU long name and a pax path, images with and without labels.
jpeg = open(f"{corpus}/jpeg/baseline.jpg", "rb").read()
png = open(f"{corpus}/png/rgb.png", "rb").read()
def shard(members, fmt):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()
write(f"{corpus}/webdataset/ustar.tar",
      shard([("a/0001.jpg", jpeg), ("a/0001.cls", b"3\n"), ("a/0002.png", png), ("a/0002.cls", b"7")],
            tarfile.USTAR_FORMAT))
write(f"{corpus}/webdataset/gnu.tar", shard([("d" * 120 + "/key.jpg", jpeg), ("x.json", b"{}")], tarfile.GNU_FORMAT))
write(f"{corpus}/webdataset/pax.tar", shard([("p" * 130 + ".webp", b"RIFF"), ("u.jpg", jpeg)], tarfile.PAX_FORMAT))
# A gzip-compressed shard (the fuzz target reads inputs with gzip's magic as .tar.gz).
import gzip as gzip_module
write(f"{corpus}/webdataset/ustar.tar.gz",
      gzip_module.compress(shard([("b/0001.png", png), ("b/0001.cls", b"1")], tarfile.USTAR_FORMAT), mtime=0))

# IDX files (MNIST's format): images and labels, raw and gzip, and a header claiming more than it holds.
import gzip
def idx(dims, data):
    return bytes([0, 0, 8, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + data
images = idx([3, 4, 5], bytes((n * 31 + i * 7) % 256 for n in range(3) for i in range(20)))
labels = idx([3], bytes([9, 2, 1]))
write(f"{corpus}/idx/images.idx", images)
write(f"{corpus}/idx/labels.idx", labels)
write(f"{corpus}/idx/images.gz", gzip.compress(images, mtime=0))
write(f"{corpus}/idx/labels.gz", gzip.compress(labels, mtime=0))
write(f"{corpus}/idx/claims_more.idx", idx([1 << 31, 1, 1], bytes(84)))

write(f"{corpus}/labels/labels.csv", "name,label\nimg_001.jpg,3\nimg_002.jpg,0\n")
write(f"{corpus}/labels/labels.txt", "# images and classes\nimg 1.jpg 12\n\timg_2.png\t4\n")
write(f"{corpus}/yolo_labels/edges.txt", "0 0 1 1 0\r\n\n  79\t0.5 1e-3 1.0 0.25  \n")
write(f"{corpus}/yolo_labels/flow.yaml", "# set\npath: ..\nval: 'images/val'\nnc: 2\nnames: [a, 'b, c']\n")
write(f"{corpus}/yolo_labels/block.yaml", "val: images\nnames:\n  - x\n  - \"y # z\"\ndownload: |\n  a: 1\n")
write(f"{corpus}/tactic_cache/tactics.txt",
      "# key fused algorithm workspace ms\n"
      "cudnn9:H200:f16:n1c64h56w56k64r3s3 1 7 4096 0.0125\n"
      "cublaslt:H200:f16:m1n1000k2048 0 3 0 0.004\n")
write(f"{corpus}/calibration_cache/small.json",
      json.dumps({"format": "kiln-fp8-calibration", "calibration": "max", "scales": {"conv1": 0.5, "fc": 1e-3}}))
write(f"{corpus}/timm_config/flat.json",
      json.dumps({"architecture": "resnet50", "num_classes": 3, "labels": ["a", "b", "c"],
                  "input_size": [3, 224, 224], "interpolation": "bicubic", "crop_pct": 0.95,
                  "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}))
write(f"{corpus}/timm_config/gaps.json",
      json.dumps({"num_classes": 4, "label_names": {"0": "x", "3": "y"},
                  "pretrained_cfg": {"fixed_input_size": True, "crop_mode": "center"}, "model_args": {"img_size": [64, 64]}}))
PY
echo "make_corpus: $(find "$corpus" -type f | wc -l) seeds, $(du -sh "$corpus" | cut -f1)"
