"""Small configurations of stock torchvision and torch.nn models, wrapped with
a cross-entropy loss, for Cleave's model zoo test.

Nothing here is written for Cleave: each entry builds the stock
architecture (torchvision.models.* or torch.nn.TransformerEncoder) in a
small configuration and adds only the loss, as a user would before
torch.onnx.export(training=TRAINING). MODELS maps a name to a function
returning (model, input_names, dynamic_axes, data_kind); data_kind is
"seq2seq" (src, tgt_in, tgt_out: int64 (SEQ or TGT, B)),
"image" (x: float32 (B, 3, 32, 32), y: int64 (B,)) or "tokens" (idx, targets:
int64 (B, SEQ), or (SEQ, B) for the sequence-first model of BATCH_AXIS;
token 0 is padding).
"""

import numpy as np
import torch
import torch.nn as nn
import torchvision

IMAGE_SIZE = 32
CLASSES = 10
VOCAB = 32
SEQ = 12
TGT = 8  # the seq2seq model's target length


class Classifier(nn.Module):
    """A stock vision model and nn.CrossEntropyLoss."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x, y):
        return self.loss_fn(self.net(x), y)


class TokenEncoder(nn.Module):
    """nn.TransformerEncoder over embedded tokens, with a key padding mask
    (token 0 is padding) and a per-token classification head; `causal`
    adds a causal attention mask, a float buffer of -inf above the diagonal
    (nn.Transformer.generate_square_subsequent_mask), as GPT-style models
    register it."""

    def __init__(self, norm_first, causal=False, batch_first=True):
        super().__init__()
        self.causal = causal
        self.batch_first = batch_first
        if causal:
            self.register_buffer(
                "causal_mask", nn.Transformer.generate_square_subsequent_mask(SEQ))
        d_model = 32
        self.embed = nn.Embedding(VOCAB, d_model)
        self.pos = nn.Parameter(torch.randn(
            *((1, SEQ) if batch_first else (SEQ, 1)), d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(
            d_model, nhead=4, dim_feedforward=64, dropout=0.0,
            activation="gelu", batch_first=batch_first,
            norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(
            layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, VOCAB)
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, idx, targets):
        h = self.embed(idx) + self.pos
        padding = idx == 0
        h = self.encoder(h, mask=self.causal_mask if self.causal else None,
                         src_key_padding_mask=padding if self.batch_first
                         else padding.t())
        logits = self.head(h)
        return self.loss_fn(logits.reshape(-1, VOCAB), targets.reshape(-1))


def _encoder_decoder():
    """A small U-Net-style network of torch.nn layers (GroupNorm exports to
    InstanceNormalization, SiLU to Sigmoid * x, ConvTranspose2d, bilinear
    and nearest Upsample to Resize, LeakyReLU, ELU, Hardswish, ReLU6 to
    Clip), with a classification head."""
    def block(cin, cout, act):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1),
                             nn.GroupNorm(4, cout), act)
    return nn.Sequential(
        block(3, 16, nn.SiLU()),
        nn.Conv2d(16, 32, 3, stride=2, padding=1),
        block(32, 32, nn.LeakyReLU(0.1)),
        nn.ConvTranspose2d(32, 16, 2, stride=2),
        block(16, 16, nn.ELU()),
        nn.AvgPool2d(2),
        nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
        block(16, 16, nn.Hardswish()),
        nn.MaxPool2d(2),
        nn.Upsample(scale_factor=2, mode="nearest"),
        nn.ReLU6(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, CLASSES))


def _image(net):
    return (Classifier(net), ["x", "y"], {"x": {0: "batch"}, "y": {0: "batch"}},
            "image")


class Seq2Seq(nn.Module):
    """nn.Transformer (encoder and decoder) in PyTorch's default layout,
    batch_first=False: source tokens [SEQ, B], target tokens [TGT, B]
    shifted by one for the decoder's input and its labels, a causal mask
    on the decoder (a float buffer of -inf above the diagonal)."""

    def __init__(self):
        super().__init__()
        d_model = 32
        self.src_embed = nn.Embedding(VOCAB, d_model)
        self.tgt_embed = nn.Embedding(VOCAB, d_model)
        self.transformer = nn.Transformer(
            d_model, nhead=4, num_encoder_layers=1, num_decoder_layers=1,
            dim_feedforward=64, dropout=0.0)
        self.register_buffer(
            "tgt_mask", nn.Transformer.generate_square_subsequent_mask(TGT))
        self.head = nn.Linear(d_model, VOCAB)
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, src, tgt_in, tgt_out):
        h = self.transformer(self.src_embed(src), self.tgt_embed(tgt_in),
                             tgt_mask=self.tgt_mask)
        return self.loss_fn(self.head(h).reshape(-1, VOCAB),
                            tgt_out.reshape(-1))


def _seq2seq():
    names = ["src", "tgt_in", "tgt_out"]
    return Seq2Seq(), names, {n: {1: "batch"} for n in names}, "seq2seq"


def _tokens(norm_first, causal=False, batch_first=True):
    axis = 0 if batch_first else 1
    return (TokenEncoder(norm_first, causal, batch_first), ["idx", "targets"],
            {"idx": {axis: "batch"}, "targets": {axis: "batch"}}, "tokens")


tvm = torchvision.models

MODELS = {
    "resnet18": lambda: _image(tvm.resnet18(num_classes=CLASSES)),
    "resnet50": lambda: _image(tvm.resnet50(num_classes=CLASSES)),
    "mobilenet_v2": lambda: _image(
        tvm.mobilenet_v2(num_classes=CLASSES, width_mult=0.25, dropout=0.0)),
    "mobilenet_v3_small": lambda: _image(
        tvm.mobilenet_v3_small(num_classes=CLASSES, width_mult=0.25,
                               dropout=0.0)),
    "densenet121": lambda: _image(
        tvm.DenseNet(growth_rate=8, block_config=(6, 12, 24, 16),
                     num_init_features=16, bn_size=2, num_classes=CLASSES)),
    "squeezenet1_1": lambda: _image(
        tvm.squeezenet1_1(num_classes=CLASSES, dropout=0.0)),
    "vit": lambda: _image(tvm.VisionTransformer(
        image_size=IMAGE_SIZE, patch_size=8, num_layers=2, num_heads=4,
        hidden_dim=32, mlp_dim=64, num_classes=CLASSES)),
    "encoder_decoder": lambda: _image(_encoder_decoder()),
    "transformer_post_norm": lambda: _tokens(False),
    "transformer_pre_norm": lambda: _tokens(True),
    "transformer_causal": lambda: _tokens(True, causal=True),
    # PyTorch's default layout: [S, B] tokens (batch_first=False).
    "transformer_seq_first": lambda: _tokens(False, batch_first=False),
    "transformer_seq2seq": _seq2seq,
    # Inception modules: four branches concatenated. Without the auxiliary
    # classifiers (in training mode they make the output a tuple), Dropout
    # 0 as in the other models.
    "googlenet": lambda: _image(tvm.googlenet(
        num_classes=CLASSES, aux_logits=False, init_weights=True,
        dropout=0.0)),
    # Channel shuffle (reshape, transpose, reshape), channel split (chunk)
    # and concatenation, depthwise convolutions.
    "shufflenet_v2": lambda: _image(tvm.shufflenet_v2_x0_5(
        num_classes=CLASSES)),
    # Squeeze-excitation (a sigmoid gate broadcast over the planes) and
    # grouped convolutions of 8 channels a group.
    "regnet_y": lambda: _image(tvm.regnet_y_400mf(num_classes=CLASSES)),
}

# The dim of each input that holds the samples, where it is not 0 (as the
# models' dynamic_axes name it "batch").
BATCH_AXIS = {"transformer_seq_first": 1, "transformer_seq2seq": 1}


def take_samples(name, array, rows):
    """The samples `rows` of one input of MODELS[name], in its layout."""
    return np.take(array, rows, axis=BATCH_AXIS.get(name, 0))

# Each model's data: "image" or "tokens" (without building the model).
DATA_KIND = {name: "tokens" if name.startswith("transformer") else "image"
             for name in MODELS}
DATA_KIND["transformer_seq2seq"] = "seq2seq"


def make_data(name, samples, rng):
    """Deterministic data for MODELS[name] from numpy Generator `rng`.

    image:  x = smooth class templates (10 of them, 3x8x8 upsampled 4x)
            plus unit noise, y = the class with 30% of labels random.
    tokens: each row follows a fixed permutation of tokens 1..VOCAB-1
            from a random start (10% random tokens), then padding (token 0)
            after a random length of 6..SEQ; targets are the next tokens.
    seq2seq: random source tokens; the target is the source reversed.
    """
    if DATA_KIND[name] == "seq2seq":
        # Reverse the source: the decoder reads a start token (0) and the
        # reversed source's first TGT - 1 tokens and predicts the next.
        src = rng.integers(1, VOCAB, (samples, SEQ), dtype=np.int64)
        target = np.concatenate([np.zeros((samples, 1), np.int64),
                                 src[:, ::-1][:, :TGT]], axis=1)
        return {n: np.ascontiguousarray(a.T) for n, a in
                (("src", src), ("tgt_in", target[:, :TGT]),
                 ("tgt_out", target[:, 1:]))}
    if DATA_KIND[name] == "image":
        templates = np.kron(rng.standard_normal((CLASSES, 3, 8, 8)),
                            np.ones((1, 1, 4, 4)))
        y = rng.integers(0, CLASSES, samples, dtype=np.int64)
        x = templates[y] + rng.standard_normal((samples, 3, IMAGE_SIZE,
                                                IMAGE_SIZE))
        flip = rng.random(samples) < 0.3
        y = np.where(flip, rng.integers(0, CLASSES, samples, dtype=np.int64),
                     y)
        return {"x": x.astype(np.float32), "y": y.astype(np.int64)}
    perm = rng.permutation(VOCAB - 1) + 1
    seq = np.empty((samples, SEQ + 1), dtype=np.int64)
    seq[:, 0] = rng.integers(1, VOCAB, samples, dtype=np.int64)
    for j in range(1, SEQ + 1):
        nxt = perm[seq[:, j - 1] - 1]
        noise = rng.random(samples) < 0.1
        rnd = rng.integers(1, VOCAB, samples, dtype=np.int64)
        seq[:, j] = np.where(noise, rnd, nxt)
    lengths = rng.integers(6, SEQ + 1, samples)
    idx = np.ascontiguousarray(seq[:, :SEQ])
    idx[np.arange(SEQ)[None, :] >= lengths[:, None]] = 0
    targets = np.ascontiguousarray(seq[:, 1:])
    if BATCH_AXIS.get(name, 0):
        idx, targets = (np.ascontiguousarray(a.T) for a in (idx, targets))
    return {"idx": idx, "targets": targets}
