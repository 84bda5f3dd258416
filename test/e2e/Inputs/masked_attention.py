#!/usr/bin/python3
"""PyTorch reference run of a model with attention's three masked forms.

test/reference/torch_train.py with one more model, `masked-attention`
(its data, flags and output layout are torch_train.py's; the tokens are the
GPT's: vocabulary 64, sequence 16). Three attention layers of 2 heads over
d_model 32, each with a residual, then a linear head and cross-entropy:

  1. causal:   where(tril, q k^T * scale, -inf)           (GPT-2's form)
  2. padding:  q k^T / sqrt(hd) + bias, bias = -1e4 on padded keys, an
               additive [B, 1, 1, S] mask (nn.MultiheadAttention's form)
  3. padding:  (q k^T * scale).masked_fill(pad, -1e9), a where-mask kept
               where the condition is false

with pad = idx < 8 (about one key in eight; a query always sees itself
in layers 2 and 3 only if unpadded, so a row may be all padded there: -1e4
and -1e9 keep such rows finite, uniform over the padded keys).

  /usr/bin/python3 masked_attention.py --optimizer sgd --steps 8 --batch 4 \\
      --out DIR
"""

import math
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "reference"))
import torch_train  # noqa: E402

VOCAB, SEQ, D, HEADS = 64, 16, 32, 2


class MaskedAttention(nn.Module):
    def __init__(self, form):
        super().__init__()
        self.form = form
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.register_buffer(
            "tril", torch.tril(torch.ones(SEQ, SEQ)).bool().view(1, 1, SEQ, SEQ))
        self.neg_inf = torch.tensor(float("-inf"))

    def forward(self, x, pad):
        b, t, d = x.shape
        hd = D // HEADS
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.reshape(b, t, HEADS, hd).transpose(1, 2)
                   for z in (q, k, v))
        att = torch.matmul(q, k.transpose(-2, -1))
        if self.form == "causal":
            att = torch.where(self.tril, att * (1.0 / math.sqrt(hd)),
                              self.neg_inf)
        elif self.form == "additive":
            bias = pad.float().view(b, 1, 1, t) * -1e4
            att = att / math.sqrt(hd) + bias
        else:
            att = (att * (1.0 / math.sqrt(hd))).masked_fill(
                pad.view(b, 1, 1, t), -1e9)
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, t, d)
        return x + self.proj(y)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D)
        self.wpe = nn.Parameter(torch.randn(1, SEQ, D) * 0.1)
        self.layers = nn.ModuleList(
            MaskedAttention(form) for form in ("causal", "additive", "fill"))
        self.head = nn.Linear(D, VOCAB)
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, idx, targets):
        pad = idx < 8
        h = self.wte(idx) + self.wpe
        for layer in self.layers:
            h = layer(h, pad)
        logits = self.head(h)
        return self.loss_fn(logits.reshape(-1, VOCAB), targets.reshape(-1))


def make():
    idx = torch.randint(0, VOCAB, (2, SEQ))
    targets = torch.randint(0, VOCAB, (2, SEQ))
    return Model(), (idx, targets), ["idx", "targets"], None


if __name__ == "__main__":
    torch_train.MODELS["masked-attention"] = make
    sys.exit(torch_train.main(["--model", "masked-attention"] + sys.argv[1:]))
