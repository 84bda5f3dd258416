"""Names tiny.onnxtxt's tensors and nodes after identifiers the generated
C++ already uses (runtime functions and types, C++ keywords and
alternative tokens, C library macros), to check that the emitter renames
its own identifiers around them.

usage: reserved_names.py IN.onnxtxt OUT.onnx
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rename_tensors import rename  # noqa: E402

rename(sys.argv[1], sys.argv[2],
       {"x": "goto", "y": "errno", "w": "sendRecv", "b": "INFINITY",
        "h": "kNoPeer", "loss": "and"},
       ["StepContext", "meshCoord"])
