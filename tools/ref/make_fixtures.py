#!/usr/bin/python3
"""Writes the golden fixtures tests/fixtures/<name>.sxt from the independent PyTorch reference.

Responsible for: random (seeded) parameters and tokens for each fixture, forward/backward in float64, the
gradient clipping, AdamW and Muon optimizers written by hand from docs/MODEL.md, the fixture contents and
meta (docs/MODEL.md, "Fixtures"), and self-checks: the hand-written AdamW against torch.optim.AdamW with
torch.nn.utils.clip_grad_norm_, a finite-difference probe of the gradients, and a read-back of every file.
Not responsible for: the model (tools/ref/model.py) or the file format (tools/ref/tensorfile.py).

Usage: /usr/bin/python3 tools/ref/make_fixtures.py [--out tests/fixtures]
"""
import argparse
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model  # noqa: E402
import tensorfile  # noqa: E402

CASES = [  # name, descriptor, seed
    ("mha_relu2_tied", "d2-w32-hd8-v64", 1001),
    ("gqa_swiglu_qknorm_untied", "d2-w32-hd8-kv2-swiglu-qknorm-untied-ropefrac0.5-softcap15-v64", 1002),
    ("gelu_mqa", "d2-w32-hd8-kv1-gelu-rope500-v64", 1003),
]
B, T = 2, 16
ADAMW = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "wd": 0.1, "clip": 1.0}
MUON = {"lr": 0.02, "momentum": 0.95, "wd": 0.1}
STEPS = 5
SNAPSHOTS = (1, STEPS)  # parameters saved after these step counts
NS_COEFFS = (3.4445, -4.7750, 2.0315)
DECAYED_GROUPS = ("matrix", "head")


def random_params(cfg, seed):
    """Every parameter random (gains 1 + 0.1·N(0,1), matrices and head N(0, 1/fan_in), emb per its init),
    rounded to float32 so the saved parameters are exactly the ones the reference starts from."""
    torch.manual_seed(seed)
    out = {}
    for name, shape, group in model.param_specs(cfg):
        if group == "gain":
            t = 1.0 + 0.1 * torch.randn(shape)
        elif name == "emb" and not cfg.tied:
            t = torch.randn(shape)
        else:
            t = torch.randn(shape) / math.sqrt(shape[1])
        out[name] = t.float()
    return out


def loss_and_grads(cfg, params, tokens):
    """Forward + backward at the dtype of `params`; returns (z, loss, grads dict). params are not modified."""
    leaves = {n: p.detach().clone().requires_grad_(True) for n, p in params.items()}
    z, loss = model.forward(cfg, leaves, tokens)
    loss.backward()
    return z.detach(), loss.detach(), {n: p.grad for n, p in leaves.items()}


def clip_grads_(grads, max_norm):
    """MODEL.md clipping, in place: if ‖all grads‖₂ > max_norm, every grad *= max_norm/(n + 1e-6). Returns n."""
    n = math.sqrt(sum(float(g.double().pow(2).sum()) for g in grads.values()))
    if max_norm > 0 and n > max_norm:
        for g in grads.values():
            g.mul_(max_norm / (n + 1e-6))
    return n


class AdamW:
    """PyTorch-semantics AdamW over the parameters named in `names`; decay only for `decayed` names."""

    def __init__(self, names, decayed, lr, beta1, beta2, eps, wd):
        self.names, self.decayed = list(names), set(decayed)
        self.lr, self.b1, self.b2, self.eps, self.wd = lr, beta1, beta2, eps, wd
        self.m, self.v, self.t = {}, {}, 0

    def step(self, params, grads):
        """Updates params[name] in place for every name of this optimizer."""
        self.t += 1
        bc1, bc2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        for n in self.names:
            p, g = params[n], grads[n]
            m = self.m.setdefault(n, torch.zeros_like(p))
            v = self.v.setdefault(n, torch.zeros_like(p))
            if n in self.decayed:
                p.mul_(1 - self.lr * self.wd)
            m.mul_(self.b1).add_((1 - self.b1) * g)
            v.mul_(self.b2).add_((1 - self.b2) * g * g)
            p.sub_(self.lr * (m / bc1) / (torch.sqrt(v / bc2) + self.eps))


def newton_schulz5(u):
    """Quintic Newton-Schulz orthogonalisation of a 2-D tensor, at its own dtype (MODEL.md, Muon)."""
    a, b, c = NS_COEFFS
    x = u / (torch.linalg.norm(u) + 1e-7)
    transposed = x.shape[0] > x.shape[1]
    if transposed:
        x = x.T
    for _ in range(5):
        A = x @ x.T
        x = a * x + (b * A + c * (A @ A)) @ x
    return x.T if transposed else x


class Muon:
    """Muon with Nesterov momentum over the parameters named in `names` (all 2-D)."""

    def __init__(self, names, lr, momentum, wd):
        self.names, self.lr, self.mu, self.wd = list(names), lr, momentum, wd
        self.buf = {}

    def step(self, params, grads):
        """Updates params[name] in place for every name of this optimizer."""
        for n in self.names:
            p, g = params[n], grads[n]
            buf = self.buf.setdefault(n, torch.zeros_like(p))
            buf.mul_(self.mu).add_((1 - self.mu) * g)
            x = newton_schulz5((1 - self.mu) * g + self.mu * buf)
            rows, cols = p.shape
            p.mul_(1 - self.lr * self.wd)
            p.sub_(self.lr * math.sqrt(max(1.0, rows / cols)) * x)


def make_optimizers(cfg, use_muon):
    """The optimizer list for one run: AdamW on everything, or Muon on `matrix` + AdamW on the rest."""
    specs = model.param_specs(cfg)
    decayed = [n for n, _, g in specs if g in DECAYED_GROUPS]
    adam_kw = {k: ADAMW[k] for k in ("lr", "beta1", "beta2", "eps", "wd")}
    if not use_muon:
        return [AdamW([n for n, _, _ in specs], decayed, **adam_kw)]
    matrices = [n for n, _, g in specs if g == "matrix"]
    rest = [n for n, _, g in specs if g != "matrix"]
    return [Muon(matrices, **MUON), AdamW(rest, decayed, **adam_kw)]


def train(cfg, params0, tokens, use_muon):
    """STEPS steps on one batch; returns ({k: params after k steps for k in SNAPSHOTS}, [grad norm per step])."""
    params = {n: p.clone() for n, p in params0.items()}
    opts = make_optimizers(cfg, use_muon)
    snaps, norms = {}, []
    for k in range(1, STEPS + 1):
        _, _, grads = loss_and_grads(cfg, params, tokens)
        norms.append(clip_grads_(grads, ADAMW["clip"]))
        for o in opts:
            o.step(params, grads)
        if k in SNAPSHOTS:
            snaps[k] = {n: p.clone() for n, p in params.items()}
    return snaps, norms


def reference(cfg, params32, tokens, dtype):
    """Everything a fixture holds, computed at `dtype`: dict tensor name -> tensor, plus grad norms."""
    params = {n: p.to(dtype) for n, p in params32.items()}
    z, loss, grads = loss_and_grads(cfg, params, tokens)
    out = {"logits": z, "loss": loss.reshape(1)}
    out.update({f"grad.{n}": g for n, g in grads.items()})
    norms = {}
    for opt_name, use_muon in (("adamw", False), ("muon", True)):
        snaps, norms[opt_name] = train(cfg, params, tokens, use_muon)
        for k, snap in snaps.items():
            out.update({f"{opt_name}{k}.{n}": p for n, p in snap.items()})
    return out, norms


def check_adamw_against_torch(cfg, params32, tokens):
    """Asserts the hand-written clipping + AdamW equals torch.optim.AdamW + clip_grad_norm_ (float64)."""
    specs = model.param_specs(cfg)
    leaves = {n: p.double().clone().requires_grad_(True) for n, p in params32.items()}
    groups = [{"params": [leaves[n] for n, _, g in specs if g in DECAYED_GROUPS], "weight_decay": ADAMW["wd"]},
              {"params": [leaves[n] for n, _, g in specs if g not in DECAYED_GROUPS], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=ADAMW["lr"], betas=(ADAMW["beta1"], ADAMW["beta2"]), eps=ADAMW["eps"])
    for _ in range(STEPS):
        opt.zero_grad()
        model.forward(cfg, leaves, tokens)[1].backward()
        torch.nn.utils.clip_grad_norm_(list(leaves.values()), ADAMW["clip"])
        opt.step()
    mine, _ = train(cfg, {n: p.double() for n, p in params32.items()}, tokens, use_muon=False)
    err = max(float((mine[STEPS][n] - leaves[n].detach()).abs().max()) for n in leaves)
    assert err < 1e-12, f"hand-written AdamW differs from torch.optim.AdamW by {err}"


def check_gradient_fd(cfg, params32, tokens, grads):
    """Central finite differences of the float64 loss along a few random directions per parameter."""
    base = {n: p.double() for n, p in params32.items()}
    gen = torch.Generator().manual_seed(7)
    for n, g in grads.items():
        d = torch.randn(base[n].shape, generator=gen, dtype=torch.float64)
        h = 1e-6
        lp = model.forward(cfg, {**base, n: base[n] + h * d}, tokens)[1].item()
        lm = model.forward(cfg, {**base, n: base[n] - h * d}, tokens)[1].item()
        fd, an = (lp - lm) / (2 * h), float((g * d).sum())
        assert abs(fd - an) <= 1e-6 * max(1.0, abs(an)), f"grad.{n}: finite difference {fd} vs autograd {an}"


def float32_rerun_diff(cfg, params32, tokens, ref64):
    """Max |float32 rerun − float64 reference| per tensor family (logits, loss, grad, adamw1, ...).

    A measure of how well-conditioned each family is: AdamW's m/(sqrt(v)+eps) amplifies rounding in tiny
    gradient elements, so multi-step AdamW results legitimately differ by ~1e-4 between implementations."""
    ref32, _ = reference(cfg, params32, tokens, torch.float32)
    out = {}
    for k, v in ref64.items():
        fam = k.split(".")[0]
        out[fam] = max(out.get(fam, 0.0), float((ref32[k].double() - v).abs().max()))
    return {f: float(f"{d:.3g}") for f, d in out.items()}


def make_fixture(name, desc, seed, out_dir):
    """Computes, self-checks, writes and reads back one fixture; returns its path."""
    cfg = model.parse_descriptor(desc)
    params32 = random_params(cfg, seed)
    tokens = torch.randint(0, cfg.vocab, (B, T + 1), generator=torch.Generator().manual_seed(seed + 500))
    check_adamw_against_torch(cfg, params32, tokens)
    ref64, norms = reference(cfg, params32, tokens, torch.float64)
    check_gradient_fd(cfg, params32, tokens, {n[5:]: t for n, t in ref64.items() if n.startswith("grad.")})
    fp32_diff = float32_rerun_diff(cfg, params32, tokens, ref64)
    print(f"{name}: loss {ref64['loss'].item():.6f}, grad norms adamw {['%.3f' % x for x in norms['adamw']]} "
          f"muon {['%.3f' % x for x in norms['muon']]}\n  float32 rerun max abs diff {fp32_diff}")

    tensors = [("tokens", tokens.numpy().astype(np.int32))]
    tensors += [(f"param.{n}", p.numpy()) for n, p in params32.items()]
    order = ["logits", "loss"] + [f"grad.{n}" for n in params32]
    order += [f"{o}{k}.{n}" for o in ("adamw", "muon") for k in SNAPSHOTS for n in params32]
    tensors += [(k, ref64[k].float().numpy()) for k in order]
    meta = {"descriptor": desc, "B": B, "T": T, "vocab": cfg.vocab, "adamw": ADAMW, "muon": MUON,
            "steps": STEPS, "computed_in": "float64", "seed": seed, "torch": torch.__version__,
            "grad_norms": norms, "fp32_rerun_maxdiff": fp32_diff}
    path = os.path.join(out_dir, f"{name}.sxt")
    tensorfile.write(path, "fixture", meta, tensors)

    kind, meta_back, back = tensorfile.read(path)
    assert kind == "fixture" and meta_back == meta and list(back) == [n for n, _ in tensors]
    for n, arr in tensors:
        assert back[n].dtype == arr.dtype and np.array_equal(back[n], arr), f"{path}: {n} did not round-trip"
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures"))
    args = ap.parse_args()
    torch.set_num_threads(1)  # deterministic reductions
    os.makedirs(args.out, exist_ok=True)
    for name, desc, seed in CASES:
        path = make_fixture(name, desc, seed, args.out)
        print(f"wrote {os.path.normpath(path)} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
