"""Writes a stock torch.nn.TransformerEncoder of LAYERS pre-norm layers
(d_model 64, 4 heads, GELU) over embedded tokens, with a per-token head
and cross-entropy, as a user would export it (dynamic batch dim).

usage: export_encoder.py OUT.onnx LAYERS [DROPOUT]  (default 0.0)
"""

import sys
import warnings

import torch
import torch.nn as nn

warnings.filterwarnings("ignore")
torch.manual_seed(0)
VOCAB, SEQ, D = 128, 32, 64


class TokenEncoder(nn.Module):
    def __init__(self, layers, dropout):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.randn(1, SEQ, D) * 0.02)
        layer = nn.TransformerEncoderLayer(
            D, nhead=4, dim_feedforward=4 * D, dropout=dropout,
            activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(
            layer, num_layers=layers, enable_nested_tensor=False)
        self.head = nn.Linear(D, VOCAB)
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, idx, targets):
        h = self.encoder(self.embed(idx) + self.pos)
        return self.loss_fn(self.head(h).reshape(-1, VOCAB), targets.reshape(-1))


dropout = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
model = TokenEncoder(int(sys.argv[2]), dropout).train()
args = tuple(torch.randint(0, VOCAB, (2, SEQ)) for _ in range(2))
torch.onnx.export(model, args, sys.argv[1], input_names=["idx", "targets"],
                  output_names=["loss"], opset_version=17,
                  dynamic_axes={"idx": {0: "batch"}, "targets": {0: "batch"}},
                  do_constant_folding=False,
                  training=torch.onnx.TrainingMode.TRAINING)
