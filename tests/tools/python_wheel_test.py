#!/usr/bin/env python3
"""The wheel tools/make_wheel.py makes, installed and used as a pip user would.

    python_wheel_test.py --build BUILD_DIR --source SOURCE_DIR

Makes the wheel from the build into a temporary folder and checks its RECORD (every file's sha256 and
size), METADATA and WHEEL; creates a fresh virtual environment (`venv --system-site-packages`: numpy is
Debian's), installs the wheel with `pip install --no-index --no-deps`, checks that the installed extension
neither links nor searches anything in the build or source folder (readelf -d, ldd), then, with
PYTHONPATH unset and from a folder outside the repository: imports kiln from the environment, finds the
family manifests inside the installed package, builds a plan from the trained ResNeSt checkpoint and
classifies Fashion-MNIST test images with it, agreeing with timm's top-1. Exits 77 (skipped) where the
build has no Python module.
"""
import argparse
import base64
import csv
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

SKIPPED = 77
IMAGES = 20  # Fashion-MNIST test images classified through the installed wheel
MIN_AGREEING = 18  # of them with timm's top-1 (fp32 here, TF32 convolutions in timm: a borderline may flip)

# Runs in the virtual environment, from a folder outside the repository:
#   USE CHECKPOINT SHARD EXPECTED_TOP1 SITE_PACKAGES
USE = r'''
import os, sys, tarfile
import numpy as np
import kiln

checkpoint, shard, expected_top1, site = sys.argv[1:5]
site = os.path.realpath(site)
assert os.path.realpath(kiln.__file__).startswith(site + "/kiln/"), f"kiln imported from {kiln.__file__}"
print(kiln.__version__, kiln.backends())
try:  # the message names the families folder the module chose: the package's own
    kiln.build("no_such_family", checkpoint, "unused.kplan")
    raise SystemExit("a family that does not exist was built")
except kiln.Error as error:
    assert f"{site}/kiln/share/kiln/families/no_such_family" in str(error), str(error)
backend = "cpu" if "cpu" in kiln.backends() else "cpu-reference"
report = kiln.build("timm_resnest", checkpoint, "resnest.kplan", precision="fp32", batch=1, backend=backend)
engine = kiln.load(report["plan"], backend=backend)
logits = engine.run(np.zeros(engine.inputs[0]["shape"], dtype=np.float32))[0]
assert logits.shape == (1, 10) and np.isfinite(logits).all(), logits
expected = np.load(expected_top1)
agreeing = 0
with tarfile.open(shard) as tar:
    pngs = sorted(m for m in tar.getnames() if m.endswith(".png"))[:int(sys.argv[5])]
    for index, name in enumerate(pngs):
        ranked = engine.classify(tar.extractfile(name).read(), top_k=10)
        assert abs(sum(entry["probability"] for entry in ranked) - 1) < 1e-3, ranked
        agreeing += ranked[0]["class"] == expected[int(name[:-4])]
print(f"top-1 as timm's on {agreeing} of {len(pngs)} images ({report['layers']} layers, {engine.backend})")
print(f"agreeing={agreeing}")
'''


def read_cache(build):
    entries = {}
    for line in open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8"):
        match = re.match(r"^([A-Za-z0-9_.+-]+):[A-Z]+=(.*)$", line.rstrip("\n"))
        if match:
            entries[match.group(1)] = match.group(2)
    return entries


def run(command, **kwargs):
    """Runs a command, echoing it; its output is returned, a failure ends the test with that output."""
    print("+", " ".join("SCRIPT" if "\n" in part else part for part in command), flush=True)
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)
    print(result.stdout, end="", flush=True)
    if result.returncode != 0:
        sys.exit(f"failed ({result.returncode}): {' '.join(command)}")
    return result.stdout


def check_wheel(path, version, python_tag):
    """The wheel's name, RECORD (each entry's digest and size, and nothing else), METADATA and WHEEL."""
    name = os.path.basename(path)
    match = re.fullmatch(rf"kiln-{re.escape(version)}-({python_tag}-{python_tag}d?-linux_x86_64)\.whl", name)
    assert match, f"{name}: not kiln-{version}-{python_tag}-{python_tag}-linux_x86_64.whl"
    dist_info = f"kiln-{version}.dist-info"
    with zipfile.ZipFile(path) as wheel:
        names = set(wheel.namelist())
        rows = list(csv.reader(io.StringIO(wheel.read(f"{dist_info}/RECORD").decode("utf-8"))))
        recorded = {row[0] for row in rows}
        assert recorded == names, f"RECORD and the zip differ: {sorted(recorded ^ names)}"
        for entry, digest, size in rows:
            if entry == f"{dist_info}/RECORD":
                assert digest == size == "", "RECORD lists a digest of itself"
                continue
            data = wheel.read(entry)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
            assert (digest, size) == (f"sha256={expected}", str(len(data))), f"RECORD is wrong for {entry}"
        metadata = wheel.read(f"{dist_info}/METADATA").decode("utf-8")
        wheel_file = wheel.read(f"{dist_info}/WHEEL").decode("utf-8")
    for field in ("Metadata-Version: 2.1", "Name: kiln", f"Version: {version}", "Requires-Dist: numpy",
                  "Summary: ", "Requires-Python: "):
        assert f"\n{field}" in "\n" + metadata, f"METADATA lacks {field}"
    for field in ("Wheel-Version: 1.0", "Root-Is-Purelib: false", f"Tag: {match.group(1)}", "Generator: "):
        assert any(line.startswith(field) for line in wheel_file.splitlines()), f"WHEEL lacks {field}"
    for needed in ("kiln/__init__.py", "kiln/share/kiln/families/timm_resnest/manifest.toml",
                   "kiln/share/kiln/tests/data/trained/resnest_fashion_tiny/model.safetensors"):
        assert needed in names, f"the wheel lacks {needed}"
    assert any(re.fullmatch(r"kiln/_kiln\..*\.so", entry) for entry in names), "the wheel lacks the extension"
    print(f"{name}: {os.path.getsize(path)} bytes, {len(names)} files, RECORD checked")


def check_links(module, roots):
    """The installed extension: no run path in the build or source folder, every library found outside."""
    dynamic = run(["readelf", "-d", module])
    for entry in re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library (?:run)?path: \[([^\]]*)\]", dynamic):
        for folder in entry.split(":"):
            if folder.startswith("$ORIGIN"):
                continue  # inside the installed package
            assert not any(os.path.realpath(folder).startswith(root) for root in roots), f"run path {folder}"
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    assert "libkiln_core.so" in " ".join(needed), f"the extension does not link libkiln_core.so: {needed}"
    loaded = run(["ldd", module])
    assert "not found" not in loaded, "a library the extension links is not found"
    for root in roots:
        assert root not in loaded, f"a library is loaded from {root}"
    package = os.path.dirname(module)
    for name, path in re.findall(r"^\s*(libkiln\S*) => (\S+)", loaded, re.MULTILINE):
        assert os.path.dirname(os.path.realpath(path)) == os.path.realpath(package), f"{name} loaded from {path}"
    cuda = re.findall(r"^\s*(lib(?:cudart|cudnn|cublas)\S*) =>", loaded, re.MULTILINE)
    assert not cuda, f"the extension loads CUDA libraries without the cuda backend: {cuda}"


def python_tag(python):
    return run([python, "-c", "import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')"]).strip()


def install(python, wheel, work, env):
    """A fresh virtual environment with the wheel installed; returns its python and site-packages."""
    venv = os.path.join(work, "venv")
    if subprocess.run([python, "-c", "import ensurepip, venv"], capture_output=True).returncode != 0:
        sys.exit(f"{python} has no venv or ensurepip: install python3-venv (tools/install-deps.sh)")
    run([python, "-m", "venv", "--system-site-packages", venv], env=env)
    venv_python = os.path.join(venv, "bin", "python")
    run([venv_python, "-m", "pip", "install", "--no-index", "--no-deps", "--no-cache-dir",
         "--disable-pip-version-check", wheel], env=env)
    site = run([venv_python, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"], env=env)
    return venv_python, site.strip()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--source", required=True)
    args = parser.parse_args()
    build, source = os.path.realpath(args.build), os.path.realpath(args.source)
    cache = read_cache(build)
    python = cache.get("KILN_PYTHON_EXECUTABLE")
    package = os.path.join(cache.get("KILN_PYTHON_DIR", ""), "kiln")
    built = os.path.isdir(package) and any(name.startswith("_kiln.") for name in os.listdir(package))
    if not python or not built:
        print("skipped: this build has no Python module (KILN_PYTHON is OFF or the module is not built)")
        return SKIPPED
    version = re.search(r"project\(\s*kiln\s+VERSION\s+([0-9.]+)", open(f"{source}/CMakeLists.txt").read())[1]
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    work = tempfile.mkdtemp(prefix="kiln-wheel-test-")
    try:
        output = run([python, f"{source}/tools/make_wheel.py", "--build", build, "--out", f"{work}/dist"],
                     env=env)
        wheel = output.strip().splitlines()[-1]
        check_wheel(wheel, version, python_tag(python))
        venv_python, site = install(python, wheel, work, env)
        module = next(f"{site}/kiln/{n}" for n in os.listdir(f"{site}/kiln") if n.startswith("_kiln."))
        check_links(module, [build, source])
        elsewhere = os.path.join(work, "elsewhere")
        os.mkdir(elsewhere)
        data = f"{source}/tests/data"
        used = run([venv_python, "-c", USE, f"{data}/trained/resnest_fashion_tiny/model.safetensors",
                    f"{data}/fashion_mnist/t10k-first2500/fashion-mnist-t10k-000000.tar.gz",
                    f"{data}/trained/resnest_fashion_tiny/test_top1.npy", site, str(IMAGES)],
                   cwd=elsewhere, env=env)
        agreeing = int(re.search(r"^agreeing=(\d+)$", used, re.MULTILINE)[1])
        assert agreeing >= MIN_AGREEING, f"top-1 as timm's on {agreeing} of {IMAGES} images only"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("python wheel test: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
