"""Builds a plan from a checkpoint and classifies a photo with it: classify.py CHECKPOINT PHOTO OUT_DIR"""
import sys

import numpy as np

import kiln

checkpoint, photo, out_dir = sys.argv[1:4]
report = kiln.build("timm_resnest", checkpoint, f"{out_dir}/model.kplan", precision="fp32", batch=1,
                    backend="cpu-reference")
engine = kiln.load(report["plan"], backend="cpu-reference")
logits = engine.run(np.zeros(engine.inputs[0]["shape"], dtype=np.float32))[0]
print(engine.outputs[0]["name"], logits.shape)
for rank, entry in enumerate(engine.classify(photo, top_k=5), start=1):
    print(f"{rank}. {entry['probability'] * 100:6.2f}%  {entry['label']} ({entry['class']})")
try:
    kiln.load(f"{out_dir}/missing.kplan")
except kiln.NotFoundError as error:
    print("kiln: error:", error)
