"""Writes export_models.py's GPT with a dynamic batch dim (the planner
binds it with --global-batch), as bench/plan_vs_measured.py exports it.

usage: export_gpt_dynamic.py OUT.onnx
"""

import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "models"))
import export_models  # noqa: E402

warnings.filterwarnings("ignore")
torch.manual_seed(0)
cfg = export_models.GPTConfig()
model = export_models.GPT(cfg).train()
args = tuple(torch.randint(0, cfg.vocab_size, (2, cfg.n_positions))
             for _ in range(2))
torch.onnx.export(model, args, sys.argv[1], input_names=["idx", "targets"],
                  output_names=["loss"], opset_version=17,
                  dynamic_axes={"idx": {0: "batch"}, "targets": {0: "batch"}},
                  do_constant_folding=False,
                  training=torch.onnx.TrainingMode.TRAINING)
