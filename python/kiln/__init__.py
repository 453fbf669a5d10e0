"""kiln: build, run and study engines for vision models, from Python.

    import kiln
    engine = kiln.load("model.kplan")            # a plan from `kiln build` or kiln.build()
    logits = engine.run(batch)[0]                # numpy float32 in, numpy float32 out
    top5 = engine.classify("dog.jpg")            # [{'class', 'label', 'probability', 'logit'}, ...]
    boxes = kiln.detector("yolov10", "model.safetensors").detect("street.jpg")

Every failure raises kiln.Error (or a subclass) with the one-line message the kiln command prints.
See docs/api/PYTHON.md and docs/API.md.
"""
from ._kiln import (  # noqa: F401
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
