"""The Python module: results equal Engine's (make_fixture's files), builds and errors, and the CUDA
zero-copy path (skipped without a GPU, and without PyTorch to make device arrays)."""
import json
import os
import pathlib
import tempfile
import unittest

import numpy as np

import kiln

FIXTURE = pathlib.Path(os.environ["KILN_SDK_FIXTURE_DIR"])
DATA = pathlib.Path(os.environ["KILN_TEST_DATA_DIR"])
SOURCE = pathlib.Path(os.environ["KILN_SOURCE_DIR"])


def fixture_input():
    return np.fromfile(FIXTURE / "input.f32", dtype=np.float32).reshape(2, 3, 224, 224)


class RunTest(unittest.TestCase):
    def test_run_equals_engine(self):
        engine = kiln.load(str(FIXTURE / "plan.kplan"), backend="cpu-reference", batch=2)
        self.assertEqual(engine.inputs, [{"name": engine.inputs[0]["name"], "shape": (2, 3, 224, 224),
                                          "dtype": "float32"}])
        self.assertEqual(engine.outputs[0]["shape"], (2, 10))
        logits = engine.run(fixture_input())
        expected = np.fromfile(FIXTURE / "logits_cpu-reference.f32", dtype=np.float32).reshape(2, 10)
        np.testing.assert_array_equal(logits[0], expected)

    def test_plan_from_bytes(self):
        engine = kiln.load((FIXTURE / "plan.kplan").read_bytes(), backend="cpu-reference")
        self.assertEqual(engine.family, "timm_resnest")
        self.assertEqual(engine.batch, 1)

    def test_classify_equals_engine(self):
        engine = kiln.load(str(FIXTURE / "plan.kplan"), batch=2)
        expected = (FIXTURE / "dog_top5.txt").read_text().split("\n")[0].split(" ", 2)
        top = engine.classify(str(DATA / "photos" / "dog.jpg"))
        self.assertEqual(len(top), 5)
        self.assertEqual(top[0]["class"], int(expected[0]))
        self.assertEqual(top[0]["label"], expected[2])
        self.assertAlmostEqual(top[0]["probability"], float(expected[1]), places=6)
        with_bytes = engine.classify((DATA / "photos" / "dog.jpg").read_bytes(), top_k=1)
        self.assertEqual(with_bytes[0]["class"], top[0]["class"])

    def test_errors_carry_the_message(self):
        with self.assertRaises(kiln.NotFoundError) as caught:
            kiln.load("/nonexistent/model.kplan")
        self.assertEqual(str(caught.exception), "/nonexistent/model.kplan: no such file")
        with self.assertRaises(kiln.UnsupportedError):
            kiln.load(str(FIXTURE / "plan.kplan"), backend="tpu")
        engine = kiln.load(str(FIXTURE / "plan.kplan"), backend="cpu-reference")
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            engine.run(np.zeros((1, 3, 200, 224), dtype=np.float32))
        self.assertIn("expected shape [1, 3, 224, 224], got [1, 3, 200, 224]", str(caught.exception))
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            engine.run(np.zeros((1, 3, 224, 224), dtype=np.float64))
        self.assertIn("expected float32", str(caught.exception))
        with self.assertRaises(kiln.Error):
            engine.classify(b"not an image")
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            engine.detect(str(DATA / "photos" / "horses.jpg"))
        self.assertIn("a timm_resnest classifier plan; a detector needs a detector plan", str(caught.exception))


class FakeDeviceArray:
    """What a CUDA array shows through __cuda_array_interface__ (v3), with no memory behind it: a host
    engine must read the interface and refuse it before touching the pointer."""

    def __init__(self, shape, typestr="<f4"):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (4096, False),
                                         "strides": None, "version": 3}


class DeviceArrayOnHostTest(unittest.TestCase):
    def test_a_host_engine_refuses_device_arrays_by_name(self):
        engine = kiln.load(str(FIXTURE / "plan.kplan"), backend="cpu-reference", batch=2)
        with self.assertRaises(kiln.UnsupportedError) as caught:
            engine.run(FakeDeviceArray((2, 3, 224, 224)))
        self.assertIn("a CUDA array runs on a cuda engine; this one runs on cpu-reference", str(caught.exception))
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            engine.run(FakeDeviceArray((2, 3, 224, 224), typestr="<f8"))
        self.assertIn("expected float32", str(caught.exception))


class DetectTest(unittest.TestCase):
    def assert_boxes_of_kiln_run(self, boxes):
        expected = json.loads((FIXTURE / "det_boxes.json").read_text())["results"][0]["detections"]
        self.assertGreater(len(expected), 0)
        self.assertEqual(len(boxes), len(expected))
        for got, want in zip(boxes, expected):
            self.assertEqual(got["class"], want["label"])
            self.assertEqual(got["name"], want["name"])
            self.assertAlmostEqual(got["score"], want["score"], delta=1e-4)
            for corner, expected_corner in zip(got["box"], want["box"]):
                self.assertAlmostEqual(corner, expected_corner, delta=1e-4)

    def test_detector_plan_gives_the_boxes_of_kiln_run(self):
        engine = kiln.load(str(FIXTURE / "det.kplan"))
        self.assertEqual(engine.family, "yolov10")
        self.assert_boxes_of_kiln_run(engine.detect(str(DATA / "photos" / "dog.jpg"), min_score=0.005))

    def test_detector_from_the_checkpoint_equals_its_fp32_plan(self):
        # kiln.detector compiles the checkpoint in fp32; the same network through a plan, same backend.
        checkpoint = str(DATA / "golden" / "yolov10n" / "model.safetensors")
        photo = DATA / "photos" / "dog.jpg"
        detector = kiln.detector("yolov10", checkpoint)
        self.assertEqual(len(detector.class_names), 10)
        with tempfile.TemporaryDirectory() as out:
            kiln.build("yolov10", checkpoint, f"{out}/det.kplan", precision="fp32",
                       families_dir=str(SOURCE / "families"))
            expected = kiln.load(f"{out}/det.kplan").detect(str(photo), min_score=0.005)
        self.assertGreater(len(expected), 0)
        self.assertEqual(detector.detect(str(photo), min_score=0.005), expected)
        self.assertEqual(detector.detect(photo.read_bytes(), min_score=0.005), expected)
        with self.assertRaises(kiln.Error) as caught:
            kiln.detector("yolov10", "/nonexistent/model.safetensors")
        self.assertIn("/nonexistent/config.json: missing", str(caught.exception))

    def test_detector_plan_refuses_classify(self):
        engine = kiln.load(str(FIXTURE / "det.kplan"), backend="cpu-reference")
        with self.assertRaises(kiln.InvalidArgumentError) as caught:
            engine.classify(str(DATA / "photos" / "dog.jpg"))
        self.assertIn("this engine runs a yolov10 detector plan", str(caught.exception))


class StudyTest(unittest.TestCase):
    def test_study_writes_its_report_returns_its_data_and_keeps_an_earlier_one(self):
        arguments = dict(checkpoint=str(DATA / "golden" / "resnest_tiny" / "model.safetensors"),
                         data=str(DATA / "photos"), backend="cpu-reference", variants=["fp32", "fp16"],
                         rounds=1, seconds_per_round=0.02, batches=[1], opt_levels=[1],
                         families_dir=str(SOURCE / "families"))
        with tempfile.TemporaryDirectory() as scratch:
            out = pathlib.Path(scratch) / "study"
            data = kiln.study("timm_resnest", output=str(out), **arguments)
            self.assertEqual(data, json.loads((out / "study.json").read_text()))
            self.assertEqual([v["name"] for v in data["variants"]], ["fp32", "fp16"])
            self.assertTrue((out / "STUDY.md").is_file())
            report = (out / "STUDY.md").read_bytes()
            with self.assertRaises(kiln.Error) as caught:
                kiln.study("timm_resnest", output=str(out), **arguments)
            self.assertIn("output holds a study report (STUDY.md / study.json): give force=True",
                          str(caught.exception))
            self.assertEqual((out / "STUDY.md").read_bytes(), report)
            with self.assertRaises(kiln.Error) as caught:
                kiln.study("timm_resnest", output=str(out), **dict(arguments, variants=["fp32", "fp8 all max"]))
            self.assertIn("variants must include the baseline", str(caught.exception))


class BuildTest(unittest.TestCase):
    def test_build_then_load(self):
        checkpoint = DATA / "golden" / "resnest_tiny" / "model.safetensors"
        with tempfile.TemporaryDirectory() as out:
            report = kiln.build("timm_resnest", str(checkpoint), f"{out}/tiny.kplan", precision="fp32",
                                batch=2, backend="cpu-reference", families_dir=str(SOURCE / "families"))
            self.assertEqual(report["family"], "timm_resnest")
            self.assertEqual(report["batch"], 2)
            engine = kiln.load(report["plan"], backend="cpu-reference")
            self.assertEqual(engine.run(fixture_input())[0].shape, (2, 10))
            with self.assertRaises(kiln.Error) as caught:
                kiln.build("timm_resnest", str(checkpoint), f"{out}/x.kplan", precision="fp7",
                           families_dir=str(SOURCE / "families"))
            self.assertIn("precision: expected fp32, fp16, bf16, fp8 or int8, got 'fp7'", str(caught.exception))
            self.assertEqual(report["backend_options"], {})  # the reference backend has none
            with self.assertRaises(kiln.Error) as caught:
                kiln.build("timm_resnest", str(checkpoint), f"{out}/x.kplan", precision="fp32",
                           backend="cpu-reference", cuda_options=["fp8-gemm=off"],
                           families_dir=str(SOURCE / "families"))
            self.assertIn("the cpu-reference backend takes no options, got 'fp8-gemm=off'", str(caught.exception))


def cuda_engine():
    if "cuda" not in kiln.backends():
        return None
    try:
        return kiln.load(str(FIXTURE / "plan.kplan"), backend="cuda", batch=2)
    except kiln.Error:
        return None  # no device


class DLPackOnly:
    """A tensor seen through DLPack alone (PyTorch tensors also have __cuda_array_interface__)."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, stream=None):
        return self.tensor.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


class CudaTest(unittest.TestCase):
    def setUp(self):
        self.engine = cuda_engine()
        if self.engine is None:
            self.skipTest("no CUDA device")

    def test_host_run_on_cuda_is_close_to_the_reference(self):
        # The plan is fp16: both backends round every activation to fp16 (2^-11 relative), but they add in
        # other orders, so roundings flip a step here and there and the flips carry through the network
        # (measured on the H200: 1.2e-3 relative L2, single logits off by up to 1.2%). A wrong buffer or
        # layout is O(1); 1e-2 separates the two, and the best class of each image must agree.
        expected = np.fromfile(FIXTURE / "logits_cpu-reference.f32", dtype=np.float32).reshape(2, 10)
        got = self.engine.run(fixture_input())[0]
        self.assertLessEqual(np.linalg.norm(got - expected) / np.linalg.norm(expected), 1e-2)
        np.testing.assert_array_equal(got.argmax(axis=1), expected.argmax(axis=1))

    def test_device_run_without_copies(self):
        try:
            import torch
        except ImportError:
            self.skipTest("PyTorch makes the device arrays of this test")
        x = torch.from_numpy(fixture_input()).cuda()
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            (out,) = self.engine.run(x, stream=stream)  # a kiln.DeviceArray
            given = torch.empty((2, 10), device="cuda")
            self.engine.run(DLPackOnly(x), out=[given], stream=stream.cuda_stream)
        stream.synchronize()
        host = self.engine.run(fixture_input())[0]
        np.testing.assert_array_equal(out.to_numpy(), host)
        np.testing.assert_array_equal(torch.as_tensor(out, device="cuda").cpu().numpy(), host)
        np.testing.assert_array_equal(given.cpu().numpy(), host)


if __name__ == "__main__":
    unittest.main()
