#!/usr/bin/python3
"""Writes tests/fixtures/optim_steps.sxt: AdamH and cautious-AdamW steps computed by PyTorch.

Responsible for: random (seeded) tensors of four optimizer groups, three steps of each optimizer in float64
written from docs/MODEL.md "Optimizers" — AdamH's direction taken from torch.optim.Adam itself, the hyperball
projection and the cautious mask by hand — and self-checks: cautious AdamW with every coordinate unmasked equals
torch.optim.AdamW, every hyperball matrix keeps its initial norm, and the file reads back bit for bit.
Not responsible for: the model's optimizer groups (docs/MODEL.md) or the file format (tools/ref/tensorfile.py).

Usage: /usr/bin/python3 tools/ref/make_optim_fixtures.py [--out tests/fixtures]
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensorfile  # noqa: E402

TENSORS = [  # name, shape, group
    ("wq", (6, 4), "matrix"),
    ("w_down", (3, 8), "matrix"),
    ("norm", (1, 8), "gain"),
    ("head", (5, 4), "head"),
]
ADAM = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "wd": 0.1}
HYPER_LR = 0.05
STEPS = 3
SEED = 2501


def adam_direction(p, g, state):
    """m̂/(sqrt(v̂) + eps) from torch.optim.Adam: one step with lr 1 and no decay moves p by exactly −that."""
    q = p.clone().requires_grad_(True)
    opt = torch.optim.Adam([q], lr=1.0, betas=(ADAM["beta1"], ADAM["beta2"]), eps=ADAM["eps"], weight_decay=0)
    if state is not None:
        opt.state[q] = state
    q.grad = g.clone()
    opt.step()
    return (p - q.detach()), opt.state[q]


def cautious_adamw(p, g, m, v, t, decayed, cautious=True):
    """In float64: AdamW where the decay applies only where u·p >= 0 (u the subtracted direction)."""
    b1, b2, eps, lr = ADAM["beta1"], ADAM["beta2"], ADAM["eps"], ADAM["lr"]
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    u = (m / (1 - b1**t)) / (torch.sqrt(v / (1 - b2**t)) + eps)
    wd = ADAM["wd"] if decayed else 0.0
    mask = (u * p >= 0) if cautious else torch.ones_like(p, dtype=torch.bool)
    p = torch.where(mask, p * (1 - lr * wd), p) - lr * u
    return p, m, v


def hyperball(p, u, radius):
    """W = R·normalize(W − lr·R·normalize(u))."""
    w = p - HYPER_LR * radius * u / torch.linalg.norm(u)
    return radius * w / torch.linalg.norm(w)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures"))
    args = ap.parse_args()
    torch.manual_seed(SEED)
    start = {n: torch.randn(s).float().double() for n, s, _ in TENSORS}
    grads = [{n: torch.randn(s).float().double() for n, s, _ in TENSORS} for _ in range(STEPS)]
    tensors = [(f"param.{n}", start[n].float().numpy()) for n, _, _ in TENSORS]
    for k in range(STEPS):
        tensors += [(f"grad{k + 1}.{n}", grads[k][n].float().numpy()) for n, _, _ in TENSORS]

    # Self-check: unmasked, the hand-written AdamW is torch.optim.AdamW.
    for n, _, group in TENSORS:
        q = start[n].clone().requires_grad_(True)
        decayed = group in ("matrix", "head")
        ref = torch.optim.AdamW([q], lr=ADAM["lr"], betas=(ADAM["beta1"], ADAM["beta2"]), eps=ADAM["eps"],
                                weight_decay=ADAM["wd"] if decayed else 0.0)
        p, m, v = start[n].clone(), torch.zeros_like(start[n]), torch.zeros_like(start[n])
        for k in range(STEPS):
            q.grad = grads[k][n].clone()
            ref.step()
            p, m, v = cautious_adamw(p, grads[k][n], m, v, k + 1, decayed, cautious=False)
        assert torch.allclose(p, q.detach(), rtol=0, atol=1e-12), n

    for n, _, group in TENSORS:   # AdamH: matrices on the hyperball, the rest AdamW (head decayed, gain not)
        p, state, radius = start[n].clone(), None, torch.linalg.norm(start[n])
        m, v = torch.zeros_like(p), torch.zeros_like(p)
        for k in range(STEPS):
            if group == "matrix":
                u, state = adam_direction(p, grads[k][n], state)
                p = hyperball(p, u, radius)
                assert abs(torch.linalg.norm(p) / radius - 1) < 1e-12
            else:
                p, m, v = cautious_adamw(p, grads[k][n], m, v, k + 1, group == "head", cautious=False)
            tensors.append((f"adamh{k + 1}.{n}", p.float().numpy()))

    kept = decayed = 0   # coordinates of decayed tensors the mask spares / decays (both must occur)
    for n, _, group in TENSORS:   # cautious AdamW: decay on matrix and head, masked per coordinate
        p, m, v = start[n].clone(), torch.zeros_like(start[n]), torch.zeros_like(start[n])
        for k in range(STEPS):
            plain, _, _ = cautious_adamw(p, grads[k][n], m, v, k + 1, group in ("matrix", "head"), cautious=False)
            p, m, v = cautious_adamw(p, grads[k][n], m, v, k + 1, group in ("matrix", "head"))
            if group in ("matrix", "head"):
                kept += int((p != plain).sum())
                decayed += int((p == plain).sum())
            tensors.append((f"cwd{k + 1}.{n}", p.float().numpy()))
    assert kept > 10 and decayed > 10, (kept, decayed)

    meta = {"adam": ADAM, "hyper_lr": HYPER_LR, "steps": STEPS, "seed": SEED, "computed_in": "float64",
            "torch": torch.__version__,
            "groups": {n: g for n, _, g in TENSORS}}
    path = os.path.join(args.out, "optim_steps.sxt")
    tensorfile.write(path, "fixture", meta, tensors)
    _, _, back = tensorfile.read(path)
    for name, arr in tensors:
        assert np.array_equal(back[name], arr), name
    print(f"wrote {path}: {len(tensors)} tensors")


if __name__ == "__main__":
    main()
