#!/usr/bin/python3
"""Writes tests/fixtures/xent_extra.sxt: the training cross-entropy with extra targets (docs/MODEL.md, "Loss").

Responsible for: the loss of one batch of logits with parameter-free multi-token prediction and the
prefix-token auxiliary loss, written from docs/MODEL.md alone — the prefix map built here from a small byte
vocabulary, the targets of every offset, the next-token loss and the weighted extra loss (each a mean over
the batch's positions), and the gradient of their sum with respect to the raw logits, in float64 by autograd
(checked here against central finite differences). Two cases: without and with the logit soft-cap.
Not responsible for: the model's logits (random here) or the file format (tools/ref/tensorfile.py).

Usage: /usr/bin/python3 tools/ref/make_xent_fixture.py [--out tests/fixtures]
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensorfile  # noqa: E402

# The vocabulary: id -> bytes (None: a special token, which has no prefix and is no prefix).
VOCAB = [b"a", b"b", b"n", b"s", b" ", b" b", b" ba", b" ban", b" bana", b" banana", b" bananas", b"an", None,
         b"ana", b"nas"]
B, T, MTP = 2, 7, 2
WEIGHTS = [0.5, 0.25, 0.3]  # offsets 1 and 2, then the prefix
CAPS = [0.0, 5.0]
SEED = 3001


def prefix_map(vocab):
    """For each token, the id of the longest token whose bytes are a proper prefix of its bytes, else -1."""
    ids = {b: i for i, b in enumerate(vocab) if b is not None}
    out = []
    for b in vocab:
        best = -1
        if b is not None:
            for n in range(len(b) - 1, 0, -1):
                if b[:n] in ids:
                    best = ids[b[:n]]
                    break
        out.append(best)
    return out


def losses(raw, tokens, prefix, cap):
    """(next-token loss, extra loss), both means over the B·T positions. raw: (B·T, V) logits."""
    z = cap * torch.tanh(raw / cap) if cap > 0 else raw
    lse = torch.logsumexp(z, dim=1)
    rows = torch.arange(B * T)
    nxt = tokens[:, 1:].reshape(-1)
    main = (lse - z[rows, nxt]).sum() / (B * T)
    extra = torch.zeros((), dtype=raw.dtype)
    for k in range(1, MTP + 1):  # position t is scored on tokens[b, t+1+k] while t+1+k <= T
        for b in range(B):
            for t in range(T - k):
                r = b * T + t
                extra = extra + WEIGHTS[k - 1] * (lse[r] - z[r, tokens[b, t + 1 + k]])
    for r in range(B * T):
        p = prefix[nxt[r]]
        if p >= 0:
            extra = extra + WEIGHTS[MTP] * (lse[r] - z[r, p])
    return main, extra / (B * T)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    V = len(VOCAB)
    prefix = prefix_map(VOCAB)
    g = torch.Generator().manual_seed(SEED)
    tokens = torch.randint(0, V, (B, T + 1), generator=g)
    tensors = [("tokens", tokens.numpy().astype(np.int32)), ("prefix", np.array(prefix, dtype=np.int32)),
               ("weights", np.array(WEIGHTS, dtype=np.float32))]
    for cap in CAPS:
        raw32 = (3 * torch.randn(B * T, V, generator=g, dtype=torch.float64)).float()
        raw = raw32.double().requires_grad_(True)
        main_loss, extra = losses(raw, tokens, prefix, cap)
        (grad,) = torch.autograd.grad(main_loss + extra, raw)
        with torch.no_grad():  # central differences on a few entries
            for idx in [(0, 0), (3, 5), (B * T - 1, V - 1), (5, int(tokens[0, 6]))]:
                h = 1e-6
                d = torch.zeros_like(raw)
                d[idx] = h
                fd = (sum(losses(raw + d, tokens, prefix, cap)) - sum(losses(raw - d, tokens, prefix, cap))) / (2 * h)
                assert abs(fd - grad[idx]) < 1e-7, (cap, idx, float(fd), float(grad[idx]))
        tag = f"cap{cap:g}"
        tensors += [(f"{tag}.logits", raw32.numpy()), (f"{tag}.loss", np.array([main_loss.item()], dtype=np.float32)),
                    (f"{tag}.extra_loss", np.array([extra.item()], dtype=np.float32)),
                    (f"{tag}.dlogits", grad.float().numpy())]
        print(f"{tag}: loss {main_loss.item():.6f}, extra loss {extra.item():.6f}")
    meta = {"B": B, "T": T, "vocab": V, "mtp": MTP, "softcaps": CAPS, "seed": SEED, "computed_in": "float64",
            "torch": torch.__version__, "vocab_bytes": [b.decode() if b is not None else None for b in VOCAB]}
    path = os.path.join(args.out, "xent_extra.sxt")
    tensorfile.write(path, "fixture", meta, tensors)
    kind, meta_back, back = tensorfile.read(path)
    assert kind == "fixture" and meta_back == meta and list(back) == [n for n, _ in tensors]
    print(f"wrote {os.path.normpath(path)} ({os.path.getsize(path)} bytes); prefix map {prefix}")


if __name__ == "__main__":
    main()
