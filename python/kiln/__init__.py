"""kiln: build, run and study engines for vision models, from Python.

    import kiln
    engine = kiln.load("model.kplan")            # a plan from `kiln build` or kiln.build()
    logits = engine.run(batch)[0]                # numpy float32 in, numpy float32 out
    top5 = engine.classify("dog.jpg")            # [{'class', 'label', 'probability', 'logit'}, ...]
    boxes = kiln.detector("yolov10", "model.safetensors").detect("street.jpg")

Every failure raises kiln.Error (or a subclass) with the one-line message the kiln command prints.
See docs/api/PYTHON.md and docs/API.md.
"""
import os

# OpenMP threads wait passively unless the user chose how they wait (src/sdk/wait_policy.h says why):
# libgomp reads the variable once, when the extension below loads it, so it is set before the import.
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["OMP_WAIT_POLICY"] = "passive"

from ._kiln import (  # noqa: E402, F401
    DeviceArray,
    Detector,
    Engine,
    Error,
    InvalidArgumentError,
    NotFoundError,
    UnsupportedError,
    __version__,
    backends,
    build,
    detector,
    load,
    study,
)
