"""Detects objects in a photo with a detector plan (kiln build yolov10 ...): detect.py PLAN PHOTO [MIN_SCORE]

One line per box, best first: class name, score, then the corners x1 y1 x2 y2 in the photo's pixels."""
import sys

import kiln

plan, photo = sys.argv[1:3]
min_score = float(sys.argv[3]) if len(sys.argv) > 3 else 0.25
engine = kiln.load(plan, backend="cpu-reference")
for box in engine.detect(photo, min_score=min_score):
    x1, y1, x2, y2 = box["box"]
    print(f"{box['name']} {box['score']:.6f} {x1:.3f} {y1:.3f} {x2:.3f} {y2:.3f}")
