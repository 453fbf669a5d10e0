#!/usr/bin/env python3
"""Packs a build's Python module into a wheel for the interpreter it was built for.

    /usr/bin/python3 tools/make_wheel.py --build build/release --out dist
    python3 -m pip install dist/kiln-*.whl

Run it with the Python the module was built for (KILN_PYTHON_EXECUTABLE in the build's CMake cache): the
wheel's tags are that interpreter's. The wheel holds the package `kiln` as `cmake --install` lays it out
(the extension and __init__.py) plus, inside the package, the family manifests and the study demos the
install puts under share/kiln (kiln/share/kiln/...), where the module looks for them first
(src/manifest/manifest_location.h): `kiln.build("timm_resnest", ...)` works from any folder with no
environment variable. kiln's own libraries (libkiln_core.so, libkiln_waits.so and, in a CUDA build, the
cuda backend's plugin libkiln_cuda.so) go into the package folder beside the extension, which finds them
there. The other shared libraries (oneDNN, libgomp, libpng, libjpeg, libwebp; CUDA's for the plugin) come
from the system; the wheel's description names them.

Standard library only; nothing is downloaded. The build must be complete (`cmake --build`), since the
wheel's files are taken from an install of it into a temporary folder.
"""
import argparse
import base64
import csv
import hashlib
import importlib.machinery
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

SUMMARY = "Engine builder, runtime and FP8 study tool for vision models"
# Libraries every Linux Python process has already: not worth naming as requirements.
BASE_LIBRARIES = re.compile(r"^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^.]*)\.so")
# kiln's libraries as installed: lib<name>.so.MAJOR.MINOR.PATCH (libkiln.so, the C API, is not for Python).
KILN_LIBRARY = re.compile(r"(libkiln_(?:core|waits|cuda))\.so\.([0-9]+\.[0-9]+)\.[0-9]+")
STAGING_PREFIX = "/kiln-wheel"  # the prefix given to `cmake --install`, below DESTDIR


class WheelError(Exception):
    pass


def read_cache(build):
    """The build's CMake cache as a dict NAME -> value."""
    path = os.path.join(build, "CMakeCache.txt")
    if not os.path.isfile(path):
        raise WheelError(f"{build}: not a CMake build folder (no CMakeCache.txt)")
    entries = {}
    for line in open(path, encoding="utf-8"):
        match = re.match(r"^([A-Za-z0-9_.+-]+):[A-Z]+=(.*)$", line.rstrip("\n"))
        if match:
            entries[match.group(1)] = match.group(2)
    return entries


def project_version(source_dir):
    """The version in the top-level CMakeLists.txt's project() call."""
    text = open(os.path.join(source_dir, "CMakeLists.txt"), encoding="utf-8").read()
    match = re.search(r"project\(\s*kiln\s+VERSION\s+([0-9][0-9.]*)", text)
    if not match:
        raise WheelError(f"{source_dir}/CMakeLists.txt: no project(kiln VERSION ...)")
    return match.group(1)


def wheel_tag():
    """(python, abi, platform) of the running interpreter, e.g. cp311, cp311, linux_x86_64."""
    if sys.implementation.name != "cpython":
        raise WheelError(f"the module is a CPython extension; this is {sys.implementation.name}")
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    soabi = sysconfig.get_config_var("SOABI") or ""  # cpython-311-x86_64-linux-gnu; 311d for a debug build
    abi = "cp" + soabi.split("-")[1] if soabi.startswith("cpython-") else python
    platform = re.sub(r"[^A-Za-z0-9_]", "_", sysconfig.get_platform())
    return python, abi, platform


def install_build(cache, build, staging):
    """`cmake --install` of the build into staging (through DESTDIR, so that a destination the cache
    gives as an absolute path lands there too); returns the installed package folder and share/kiln."""
    cmake = cache.get("CMAKE_COMMAND", "cmake")
    env = dict(os.environ, DESTDIR=staging)
    result = subprocess.run([cmake, "--install", build, "--prefix", STAGING_PREFIX], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        raise WheelError(f"cmake --install {build} failed (is the build complete?):\n{result.stdout}")

    def installed(destination):
        absolute = destination if os.path.isabs(destination) else os.path.join(STAGING_PREFIX, destination)
        return os.path.join(staging, absolute.lstrip("/"))

    # GNUInstallDirs leaves the cache's CMAKE_INSTALL_DATADIR empty unless the user set it: then "share".
    python_dir = cache.get("KILN_PYTHON_INSTALL_DIR") or "lib/python3/dist-packages"
    package = installed(os.path.join(python_dir, "kiln"))
    share = installed(os.path.join(cache.get("CMAKE_INSTALL_DATADIR") or "share", "kiln"))
    libdir = installed(cache.get("CMAKE_INSTALL_LIBDIR") or "lib")
    for folder in (package, os.path.join(share, "families"), libdir):
        if not os.path.isdir(folder):
            raise WheelError(f"the install has no {os.path.relpath(folder, staging)}")
    return package, share, libdir


def copy_kiln_libraries(libdir, package):
    """kiln's own shared libraries, from the install's LIBDIR into the package folder under their SONAMEs
    (the names the extension and the plugin loader ask for); returns their paths there."""
    copied = []
    for name in sorted(os.listdir(libdir)):
        match = KILN_LIBRARY.fullmatch(name)
        if match and not os.path.islink(os.path.join(libdir, name)):
            soname = f"{match.group(1)}.so.{match.group(2)}"
            shutil.copyfile(os.path.join(libdir, name), os.path.join(package, soname))
            copied.append(os.path.join(package, soname))
    if not any(os.path.basename(path).startswith("libkiln_core.so.") for path in copied):
        raise WheelError(f"the install has no libkiln_core.so in {libdir}")
    return copied


def extension_of(package):
    """The extension module in the package, checked to load in the running interpreter."""
    modules = [name for name in os.listdir(package) if name.startswith("_kiln.") and name.endswith(".so")]
    if len(modules) != 1:
        raise WheelError(f"expected one _kiln*.so in the installed package, found {modules}")
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    if not any(modules[0] == "_kiln" + suffix for suffix in suffixes):
        raise WheelError(f"{modules[0]} was built for another Python than {sys.executable} (which loads "
                         f"{', '.join(suffixes)}): run this script with the KILN_PYTHON_EXECUTABLE of the "
                         "build's CMake cache")
    return os.path.join(package, modules[0])


def dynamic_section(extension):
    """(NEEDED libraries, RUNPATH and RPATH folders) of an ELF file, from `readelf -d`."""
    readelf = subprocess.run(["readelf", "-d", extension], check=True, stdout=subprocess.PIPE, text=True)
    output = readelf.stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", output)
    found = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library (?:run)?path: \[([^\]]*)\]", output)
    paths = [path for entry in found for path in entry.split(":") if path]
    return needed, paths


def check_runpath(binary, paths, cache):
    """A wheel must not lean on the build: no RUNPATH or RPATH entry in the build or source folder (those
    relative to the binary's own folder point inside the installed package)."""
    roots = [os.path.realpath(cache[key]) for key in ("kiln_BINARY_DIR", "kiln_SOURCE_DIR") if key in cache]
    for path in paths:
        real = os.path.realpath(path)
        if not path.startswith("$ORIGIN") and any(real == root or real.startswith(root + os.sep) for root in roots):
            raise WheelError(f"{os.path.basename(binary)}'s run path names {path}, which a wheel does not carry")


def metadata(version, needed, cuda):
    """METADATA (core metadata 2.1), its description naming the system libraries the extension links."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    packages = "libdnnl2, libgomp1, libjpeg62-turbo, libpng16-16, libwebp7, libtomlplusplus3, zlib1g"
    if cuda:
        summary = SUMMARY + " (with the cuda backend, a plugin loaded where the CUDA libraries are installed)"
        runs_on = "the CPU or an NVIDIA GPU"
        packages += ("; the cuda backend, libkiln_cuda.so, loads on first use and needs CUDA and cuDNN where "
                     "the build found them: without them every CPU call works")
    else:
        summary = SUMMARY + " (CPU build)"
        runs_on = "the CPU"
    header = ["Metadata-Version: 2.1", "Name: kiln", f"Version: {version}", f"Summary: {summary}",
              f"Requires-Python: =={python}.*", "Requires-Dist: numpy",
              "Description-Content-Type: text/markdown"]
    description = [
        f"kiln builds engines (plans) for vision models from their checkpoints, runs them on {runs_on} and "
        "studies their FP8 and int8 quantization.",
        "",
        "`import kiln`: `kiln.build`, `kiln.load(plan).run(array)`, `classify`, `kiln.detector(...).detect`, "
        "`kiln.study`. The family manifests ship inside the package.",
        "",
        f"The extension links these shared libraries, which the system provides (Debian 12: {packages}):",
        "",
    ]
    description += [f"- {name}" for name in needed if not BASE_LIBRARIES.match(name) and not name.startswith("libkiln")]
    return "\n".join(header + [""] + description) + "\n"


def wheel_file(tag):
    return "\n".join(["Wheel-Version: 1.0", "Generator: kiln tools/make_wheel.py", "Root-Is-Purelib: false",
                      f"Tag: {tag}", ""])


def record_row(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return [name, f"sha256={digest}", str(len(data))]


def package_files(package, share):
    """(name in the wheel, file on disk) for the package and its share/kiln, sorted."""
    files = []
    for root_folder, prefix in ((package, "kiln"), (share, "kiln/share/kiln")):
        for folder, subfolders, names in os.walk(root_folder):
            subfolders[:] = [s for s in subfolders if s != "__pycache__"]
            relative = os.path.relpath(folder, root_folder)
            for name in names:
                path = os.path.join(folder, name)
                inner = name if relative == "." else os.path.join(relative, name)
                files.append((f"{prefix}/{inner}".replace(os.sep, "/"), path))
    return sorted(files)


def write_wheel(path, files, dist_info, texts):
    """The zip: the files, then dist-info's texts, then RECORD with every other entry's sha256 and size."""
    rows = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, source in files:
            data = open(source, "rb").read()
            info = zipfile.ZipInfo.from_file(source, name)
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
            rows.append(record_row(name, data))
        for name, text in texts:
            data = text.encode("utf-8")
            wheel.writestr(f"{dist_info}/{name}", data)
            rows.append(record_row(f"{dist_info}/{name}", data))
        rows.append([f"{dist_info}/RECORD", "", ""])
        record = io.StringIO()
        csv.writer(record, lineterminator="\n").writerows(rows)
        wheel.writestr(f"{dist_info}/RECORD", record.getvalue())


def make_wheel(build, out):
    cache = read_cache(build)
    if "KILN_PYTHON_EXECUTABLE" not in cache:
        raise WheelError(f"{build}: the Python module is not built there (KILN_PYTHON is OFF)")
    version = project_version(cache["kiln_SOURCE_DIR"])
    tag = "-".join(wheel_tag())
    with tempfile.TemporaryDirectory(prefix="kiln-wheel-") as staging:
        package, share, libdir = install_build(cache, build, staging)
        needed = []
        for binary in [extension_of(package)] + copy_kiln_libraries(libdir, package):
            binary_needs, runpath = dynamic_section(binary)
            check_runpath(binary, runpath, cache)
            if "libkiln_cuda" not in binary:  # the plugin's CUDA libraries are named as such below
                needed += [name for name in binary_needs if name not in needed]
        dist_info = f"kiln-{version}.dist-info"
        texts = [("METADATA", metadata(version, needed, cache.get("KILN_CUDA") == "ON")),
                 ("WHEEL", wheel_file(tag)), ("top_level.txt", "kiln\n")]
        os.makedirs(out, exist_ok=True)
        path = os.path.join(out, f"kiln-{version}-{tag}.whl")
        write_wheel(path, package_files(package, share), dist_info, texts)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build/release", help="the build folder (default build/release)")
    parser.add_argument("--out", default="dist", help="where the wheel is written (default dist)")
    args = parser.parse_args()
    try:
        path = make_wheel(os.path.abspath(args.build), args.out)
    except (WheelError, OSError, subprocess.CalledProcessError) as error:
        sys.exit(f"make_wheel: error: {error}")
    print(path)


if __name__ == "__main__":
    main()
