"""Writes an MLP with BatchNorm1d after each hidden layer,
784-H-H-10 (H from argv, default 4096), cross-entropy, the batch symbolic:
a model the `megatron` preset does not recognise (a BatchNorm between two
linear layers is not elementwise), so its tensor parallelism comes from
the planner's intra-op ILP. Exported in training mode by PyTorch.

  make_bn_mlp.py OUT.onnx [H]
"""

import sys
import warnings

import torch
import torch.nn as nn


class BatchNormMLP(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc1 = nn.Linear(784, hidden)
        self.bn1 = nn.BatchNorm1d(hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.bn2 = nn.BatchNorm1d(hidden)
        self.fc3 = nn.Linear(hidden, 10)
        self.relu = nn.ReLU()
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x, y):
        h = self.relu(self.bn1(self.fc1(x)))
        h = self.relu(self.bn2(self.fc2(h)))
        return self.loss_fn(self.fc3(h), y)


def main():
    out = sys.argv[1]
    hidden = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
    torch.manual_seed(0)
    model = BatchNormMLP(hidden)
    model.train()
    warnings.filterwarnings("ignore", message=".*num_batches_tracked")
    x = torch.randn(4, 784)
    y = torch.randint(0, 10, (4,))
    torch.onnx.export(
        model, (x, y), out, input_names=["x", "y"], output_names=["loss"],
        dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
        opset_version=17, do_constant_folding=False,
        training=torch.onnx.TrainingMode.TRAINING)


if __name__ == "__main__":
    main()
