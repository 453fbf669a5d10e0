"""File and log helpers shared by the golden-data makers (no timm needed here).

Kept apart from the timm-facing code so the parts that must be right on the first try on
the GPU machine (safetensors writing, JSON meta data, photo loading) can be exercised on a
machine without timm.
"""
import json
import platform
import struct
from pathlib import Path
from typing import Dict, List

import numpy as np
import torch
from PIL import Image

PHOTO_EXTENSIONS = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}


def log(msg: str = "") -> None:
    """Print immediately: the GPU session's log is read live and may be cut short."""
    print(msg, flush=True)


def warn(msg: str) -> None:
    """Make deviations from what the README promises stand out in the log."""
    print(f"WARNING: {msg}", flush=True)


def jsonable(obj):
    """Convert tuples, numpy and torch values so json.dump accepts meta data as-is."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, (np.ndarray, torch.Tensor)):
        return obj.tolist()
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return repr(obj)


def write_json(path: Path, obj) -> None:
    """Indented JSON in insertion order, so reruns diff cleanly; no timestamps anywhere."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(jsonable(obj), f, indent=2)
        f.write("\n")


def versions() -> Dict[str, str]:
    """Library versions, since preprocessing and init details change between releases."""
    out = {"python": platform.python_version(), "torch": torch.__version__,
           "numpy": np.__version__}
    for mod in ("timm", "torchvision", "PIL", "safetensors"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - version reporting must never stop the run
            out[mod] = "not installed"
    return out


def list_photos(photo_dir: Path) -> List[Path]:
    """All image files in the folder, sorted by name so every run sees the same order."""
    photos = sorted(p for p in Path(photo_dir).iterdir()
                    if p.is_file() and p.suffix.lower() in PHOTO_EXTENSIONS)
    stems = [p.stem for p in photos]
    dup = sorted({s for s in stems if stems.count(s) > 1})
    if dup:
        raise SystemExit(f"photos with the same stem would overwrite each other's fixtures: {dup}")
    return photos


def load_rgb(path: Path) -> Image.Image:
    """Open a photo the way timm's datasets do: PIL, convert('RGB'), no EXIF rotation."""
    with Image.open(path) as img:
        return img.convert("RGB")


def save_npy(path: Path, array: np.ndarray) -> None:
    """C-contiguous .npy without pickling, what kiln's npy reader expects."""
    np.save(path, np.ascontiguousarray(array), allow_pickle=False)


def rel_l2(a: np.ndarray, ref: np.ndarray) -> float:
    """||a - ref|| / ||ref|| in float64, the project's error measure."""
    a = np.asarray(a, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm((a - ref).ravel()) / np.linalg.norm(ref.ravel()))


def folder_size(path: Path) -> int:
    """Total bytes of the files directly in a folder."""
    return sum(p.stat().st_size for p in Path(path).iterdir() if p.is_file())


# ----------------------------------------------------------------------------------------
# safetensors
# ----------------------------------------------------------------------------------------

_ST_DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16",
              torch.int64: "I64", torch.int32: "I32", torch.int8: "I8", torch.uint8: "U8",
              torch.bool: "BOOL"}
_NP_DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8", "I32": "<i4",
              "I8": "i1", "U8": "u1", "BOOL": "?"}


def write_safetensors_minimal(tensors: Dict[str, torch.Tensor], path: Path) -> None:
    """Write the safetensors format directly (used only when the package is missing).

    Layout: u64 little-endian header length, JSON header {name: {dtype, shape,
    data_offsets}} padded with spaces to a multiple of 8 bytes, then the raw little-endian
    data in header order, offsets relative to the end of the header.
    """
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].detach().to("cpu").contiguous()
        code = _ST_DTYPES[t.dtype]
        data = t.numpy().astype(np.dtype(_NP_DTYPES[code]), copy=False).tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def read_safetensors_minimal(path: Path) -> Dict[str, torch.Tensor]:
    """Read a safetensors file without the package, for verification."""
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        arr = np.frombuffer(raw[base + a:base + b], dtype=np.dtype(_NP_DTYPES[info["dtype"]]))
        out[name] = torch.from_numpy(arr.reshape(info["shape"]).astype(arr.dtype.newbyteorder("=")))
    return out


def save_weights(tensors: Dict[str, torch.Tensor], path: Path) -> str:
    """Save like timm's save_for_hf (safetensors.torch.save_file, no metadata); fall back to
    the minimal writer when the package is missing. Returns which writer was used."""
    try:
        import safetensors.torch  # noqa: WPS433
    except ImportError:
        write_safetensors_minimal(tensors, path)
        return "minimal safetensors writer in golden_io.py (safetensors not installed)"
    safetensors.torch.save_file(tensors, str(path))
    return f"safetensors.torch.save_file (safetensors {versions()['safetensors']})"


def load_weights(path: Path) -> Dict[str, torch.Tensor]:
    """Load a safetensors file with the package when present, else the minimal reader."""
    try:
        import safetensors.torch  # noqa: WPS433
    except ImportError:
        return read_safetensors_minimal(path)
    return safetensors.torch.load_file(str(path))


def verify_saved_weights(tensors: Dict[str, torch.Tensor], path: Path) -> None:
    """Fail loudly if the file on disk is not exactly the tensors meant to be there; the
    independent reader also checks the file layout when the package wrote it."""
    for reader in (load_weights, read_safetensors_minimal):
        back = reader(path)
        if set(back) != set(tensors):
            raise RuntimeError(f"{path}: key set changed on save/load ({reader.__name__})")
        for k, v in tensors.items():
            b = back[k]
            if b.dtype != v.dtype or tuple(b.shape) != tuple(v.shape) or not torch.equal(b, v):
                raise RuntimeError(f"{path}: tensor {k} changed on save/load ({reader.__name__})")
