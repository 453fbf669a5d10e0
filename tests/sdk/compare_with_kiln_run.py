"""Checks an example's printed results against `kiln run --json` on the same plan, photo and backend.

  compare_with_kiln_run.py classify EXAMPLE_OUTPUT KILN_RUN_JSON
      lines "N. PP.PP%  LABEL (CLASS)": the same classes in the same order, probabilities within 0.005
      points (the examples print two decimals)
  compare_with_kiln_run.py detect EXAMPLE_OUTPUT KILN_RUN_JSON
      lines "NAME SCORE X1 Y1 X2 Y2": the same boxes in the same order, scores within 1e-6 and corners
      within 0.001 px (the examples print six and three decimals)
Exit status 0 when they agree, 1 with one line naming the first difference."""
import json
import re
import sys

CLASS_LINE = re.compile(r"^(\d+)\.\s+([\d.]+)%\s+(.*) \((\d+)\)$")


def fail(message):
    print(f"compare_with_kiln_run: {message}")
    sys.exit(1)


def classify(lines, result):
    printed = [CLASS_LINE.match(line) for line in lines]
    printed = [m for m in printed if m]
    expected = result["top"][:len(printed)]
    if not printed:
        fail("the example printed no ranked class")
    for m, want in zip(printed, expected):
        rank, percent, label, index = int(m[1]), float(m[2]), m[3], int(m[4])
        if (index, label) != (want["class"], want["label"]):
            fail(f"rank {rank}: example says {label} ({index}), kiln run {want['label']} ({want['class']})")
        if abs(percent - 100 * want["probability"]) > 0.005 + 1e-9:
            fail(f"rank {rank}: example {percent}%, kiln run {100 * want['probability']:.4f}%")
    return len(printed)


def detect(lines, result):
    boxes = [line.rsplit(" ", 5) for line in lines if line.strip()]
    expected = result["detections"]
    if len(boxes) != len(expected):
        fail(f"the example printed {len(boxes)} boxes, kiln run {len(expected)}")
    for i, (box, want) in enumerate(zip(boxes, expected)):
        name, score, corners = box[0], float(box[1]), [float(v) for v in box[2:]]
        if name != want["name"]:
            fail(f"box {i}: example says {name}, kiln run {want['name']}")
        if abs(score - want["score"]) > 1e-6 + 1e-9:
            fail(f"box {i}: example score {score}, kiln run {want['score']}")
        if any(abs(a - b) > 0.001 + 1e-6 for a, b in zip(corners, want["box"])):
            fail(f"box {i}: example corners {corners}, kiln run {want['box']}")
    return len(boxes)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("classify", "detect"):
        print(__doc__)
        sys.exit(2)
    mode, output, reference = sys.argv[1:]
    with open(output) as f:
        lines = f.read().splitlines()
    with open(reference) as f:
        result = json.load(f)["results"][0]
    count = classify(lines, result) if mode == "classify" else detect(lines, result)
    print(f"{output}: {count} {'classes' if mode == 'classify' else 'boxes'} as kiln run gives them")


main()
