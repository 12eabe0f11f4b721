#!/usr/bin/python3
"""Writes the golden fixtures of the architecture variants, tests/fixtures/<name>.sxt (docs/MODEL.md, "Fixtures").

Responsible for: the variant cases and the routing-margin guard (a case whose seed gives a near-tie in some
top-k choice, which fp32 could resolve differently, is retried with the next seed, seed + 1000·attempt). Everything else (seeded parameters and
tokens, float64 forward/backward, the hand-written AdamW and Muon, self-checks, file layout, read-back) is
make_fixtures.py's, run unchanged with its model module swapped for tools/ref/variants.py (same interface).
The fixture's `loss` is the training objective: cross-entropy + MoE auxiliary loss.

Usage: /usr/bin/python3 tools/ref/make_variant_fixtures.py [--out tests/fixtures] [--only NAME ...]
(--only: write just those cases; another machine's BLAS rewrites the others' debug meta, not their tensors)
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures  # noqa: E402
import variants  # noqa: E402

CASES = [  # name, descriptor, seed
    ("mla_qlatent_gate", "d2-w32-hd8-mla-dc16-dcq12-rd4-gate-v64", 2011),
    ("mla_padded_swa", "d2-w32-hd8-mla-dc16-rd4-nope6-nolatnorm-swa5-local2-attcap4-rope500-v64", 2002),
    ("moe_softmax_aux_shared", "d2-w32-hd8-moe4k2-ew24-shared1-aux0.1-v64", 2003),
    ("moe_swiglu_sigmoid_bias", "d2-w32-hd8-kv2-swiglu-moe6k2-ew16-sigmoid-balance=bias-v64", 2004),
    ("gqa_gate_swa_attcap", "d2-w32-hd8-kv2-qknorm-ropefrac0.5-gate-swa4-local2-attcap3-softcap15-untied-v64", 2005),
    ("gqa_xsa_egate", "d2-w32-hd8-kv2-xsa-egate-swa4-local2-v64", 2006),
    ("mla_xsa_gate", "d2-w32-hd8-mla-dc16-rd4-nope6-xsa-gate-v64", 2007),
    ("bigram_sign", "d2-w32-hd8-kv2-bigram23-bsign8-v64", 2008),
    ("moe_qb", "d2-w32-hd8-kv2-moe6k2-ew16-shared1-balance=qb-v64", 2009),
    ("fp8_relu2", "d2-w32-hd8-fp8-v64", 2012),
    ("fp8_swiglu", "d2-w32-hd8-kv2-swiglu-fp8-v64", 2013),
    ("ve_qknorm_xsa", "d4-w32-hd8-kv2-qknorm-xsa-ve2-v64", 2009),
    ("smear_bigram_ve", "d2-w32-hd8-kv1-smear-bigram23-ve1-egate-untied-v64", 2010),
    ("dcmha_xsa_gate", "d2-w32-hd8-kv2-qknorm-dcmha3-xsa-gate-swa5-v64", 2012),
    ("gqa_gnorm_untied", "d2-w32-hd8-kv2-gnorm6-swiglu-untied-v64", 2601),
]
STE_NOTE = ("{}: fp8 rounding is piecewise constant, its straight-through gradient is not the loss's derivative: "
            "finite differences skipped (tests/test_fp8.c checks the backward against naive loops)")
MIN_MARGIN = 2e-4  # smallest allowed gap between the k-th and (k+1)-th selection score in any forward
ATTEMPTS = 20


def make_qb_step_fixture(out_dir, seed=2010):
    """tests/fixtures/moe_qb_step.sxt: one Quantile Balancing step on a planted skewed logit matrix u (T,E) and
    bias b: the chosen experts, each token's threshold, the per-expert prices and the next bias (variants.qb_step)."""
    T, E, K = 40, 8, 2
    g = torch.Generator().manual_seed(seed)
    u = (torch.randn(T, E, generator=g) + torch.linspace(1.5, -1.5, E)).float()   # expert 0 favoured
    b = (0.3 * torch.randn(E, generator=g)).float()
    idx, alpha, beta, nb = variants.qb_step(u, b, K)
    path = os.path.join(out_dir, "moe_qb_step.sxt")
    tensors = [("u", u.numpy()), ("b", b.numpy()), ("idx", idx.numpy()), ("alpha", alpha.numpy()),
               ("beta", beta.numpy()), ("b_next", nb.numpy())]
    make_fixtures.tensorfile.write(path, "fixture", {"T": T, "E": E, "K": K, "seed": seed}, tensors)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures"))
    ap.add_argument("--only", nargs="+", metavar="NAME", help="write only these cases")
    args = ap.parse_args()
    unknown = set(args.only or []) - {name for name, _, _ in CASES} - {"moe_qb_step"}
    if unknown:
        raise SystemExit(f"unknown case(s): {' '.join(sorted(unknown))}")
    torch.set_num_threads(1)
    make_fixtures.model = variants
    fd_check = make_fixtures.check_gradient_fd
    os.makedirs(args.out, exist_ok=True)
    for name, desc, seed in CASES:
        if args.only and name not in args.only:
            continue
        straight_through = "fp8" in desc.split("-")
        make_fixtures.check_gradient_fd = (lambda *a, name=name: print(STE_NOTE.format(name))) if straight_through else fd_check
        for attempt in range(ATTEMPTS):
            variants.min_route_margin = float("inf")
            path = make_fixtures.make_fixture(name, desc, seed + 1000 * attempt, args.out)
            margin = variants.min_route_margin
            if margin > MIN_MARGIN:
                break
            print(f"{name}: routing margin {margin:.2e} too small for an fp32 comparison; next seed")
        else:
            raise SystemExit(f"{name}: no seed with a routing margin above {MIN_MARGIN}")
        print(f"wrote {os.path.normpath(path)} ({os.path.getsize(path)} bytes), routing margin {margin:.3g}")
    if not args.only or "moe_qb_step" in args.only:
        print(f"wrote {os.path.normpath(make_qb_step_fixture(args.out))}")


if __name__ == "__main__":
    main()
