#!/usr/bin/python3
"""Turns examples/corpus.txt into training data for examples/gpt.onnx: the
text's characters as token ids (vocabulary 64: a-z, space, newline and
punctuation), cut into windows of 16 tokens; `targets` is `idx` shifted by
one (next-character prediction).

usage: make_data.py CORPUS OUT_DIR
"""
import os
import sys

import numpy as np

ALPHABET = "abcdefghijklmnopqrstuvwxyz \n.,;:'\"!?-()0123456789"
SEQ = 16

text = open(sys.argv[1]).read().lower()
ids = np.array([ALPHABET.index(c) for c in text if c in ALPHABET], np.int64)
starts = np.arange(0, len(ids) - SEQ - 1, SEQ // 2)
idx = np.stack([ids[s:s + SEQ] for s in starts])
targets = np.stack([ids[s + 1:s + SEQ + 1] for s in starts])
os.makedirs(sys.argv[2], exist_ok=True)
np.save(os.path.join(sys.argv[2], "idx.npy"), idx)
np.save(os.path.join(sys.argv[2], "targets.npy"), targets)
print("%d samples of %d tokens" % (len(idx), SEQ))
