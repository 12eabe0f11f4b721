"""Independent PyTorch reference of the sextant model, written from docs/MODEL.md alone.

Responsible for: parsing a model descriptor (`d2-w32-hd8-kv2-swiglu-...`) into a Config, the parameter
table (names, shapes, optimizer groups, in checkpoint order), the spec initialisation, and the forward pass
(logits after soft-cap, mean cross-entropy loss). Gradients come from autograd.
Not responsible for: optimizers (tools/ref/make_fixtures.py writes them by hand; bench/torch_train.py uses
torch.optim), file I/O (tools/ref/tensorfile.py), or data.

Parameters are a plain dict name -> tensor, so the same code runs in float64 (fixtures) and float32/bf16
autocast (benchmark).
"""
import math
import re
from dataclasses import dataclass

import torch
import torch.nn.functional as F

MLP_KINDS = ("relu2", "swiglu", "gelu")
_NUM = r"(\d+(?:\.\d+)?)"


@dataclass(frozen=True)
class Config:
    """Model hyper-parameters; see docs/MODEL.md, "Descriptor"."""
    layers: int
    width: int
    head_dim: int
    heads: int
    kv_heads: int
    mlp: str
    ff: int
    qknorm: bool
    tied: bool
    rope_base: float
    rope_frac: float
    softcap: float  # 0 = off
    vocab: int

    @property
    def rot_dim(self):
        """Number of channels of each head that RoPE rotates (even)."""
        return 2 * math.floor(self.rope_frac * self.head_dim / 2)


def parse_descriptor(desc):
    """Returns the Config of descriptor string `desc`; raises ValueError on anything malformed."""
    parts = desc.split("-")
    m = re.fullmatch(r"d(\d+)", parts[0])
    if not m or int(m.group(1)) < 1:
        raise ValueError(f"descriptor {desc!r}: must start with d<layers>")
    layers = int(m.group(1))
    opt = {"width": 64 * layers, "head_dim": 64, "kv_heads": None, "mlp": "relu2", "ff": None,
           "qknorm": False, "tied": True, "rope_base": 10000.0, "rope_frac": 1.0, "softcap": 0.0,
           "vocab": 8192}
    patterns = [  # order matters: ropefrac before rope
        (r"w(\d+)", "width", int), (r"hd(\d+)", "head_dim", int), (r"kv(\d+)", "kv_heads", int),
        (r"ff(\d+)", "ff", int), (r"ropefrac" + _NUM, "rope_frac", float), (r"rope" + _NUM, "rope_base", float),
        (r"softcap" + _NUM, "softcap", float), (r"v(\d+)", "vocab", int),
    ]
    for p in parts[1:]:
        if p in MLP_KINDS:
            opt["mlp"] = p
        elif p == "qknorm":
            opt["qknorm"] = True
        elif p == "untied":
            opt["tied"] = False
        else:
            for pat, key, conv in patterns:
                m = re.fullmatch(pat, p)
                if m:
                    opt[key] = conv(m.group(1))
                    break
            else:
                raise ValueError(f"descriptor {desc!r}: unknown option {p!r}")
    C, hd = opt["width"], opt["head_dim"]
    if C < 1 or hd < 1 or C % hd:
        raise ValueError(f"descriptor {desc!r}: head dim {hd} must divide width {C}")
    H = C // hd
    kv = opt["kv_heads"] if opt["kv_heads"] is not None else H
    if kv < 1 or H % kv:
        raise ValueError(f"descriptor {desc!r}: kv heads {kv} must divide {H} heads")
    ff = opt["ff"]
    if ff is None:
        ff = (8 * C + 47) // 48 * 16 if opt["mlp"] == "swiglu" else 4 * C  # ceil(8C/3) up to a multiple of 16
    if not (0.0 <= opt["rope_frac"] <= 1.0) or opt["rope_base"] <= 0 or opt["vocab"] < 1 or ff < 1:
        raise ValueError(f"descriptor {desc!r}: option out of range")
    return Config(layers=layers, width=C, head_dim=hd, heads=H, kv_heads=kv, mlp=opt["mlp"], ff=ff,
                  qknorm=opt["qknorm"], tied=opt["tied"], rope_base=opt["rope_base"],
                  rope_frac=opt["rope_frac"], softcap=opt["softcap"], vocab=opt["vocab"])


def param_specs(cfg):
    """List of (name, shape, group) in checkpoint/optimizer order; group is embed|gain|matrix|head."""
    C, hd, F_ = cfg.width, cfg.head_dim, cfg.ff
    specs = [("emb", (cfg.vocab, C), "embed")]
    for i in range(cfg.layers):
        specs += [(f"l{i}.attn_norm", (C,), "gain"),
                  (f"l{i}.wq", (cfg.heads * hd, C), "matrix"),
                  (f"l{i}.wk", (cfg.kv_heads * hd, C), "matrix"),
                  (f"l{i}.wv", (cfg.kv_heads * hd, C), "matrix"),
                  (f"l{i}.wo", (C, cfg.heads * hd), "matrix"),
                  (f"l{i}.mlp_norm", (C,), "gain")]
        if cfg.mlp == "swiglu":
            specs.append((f"l{i}.w_gate", (F_, C), "matrix"))
        specs += [(f"l{i}.w_up", (F_, C), "matrix"),
                  (f"l{i}.w_down", (C, F_), "matrix")]
    specs.append(("norm_f", (C,), "gain"))
    if not cfg.tied:
        specs.append(("head", (cfg.vocab, C), "head"))
    return specs


def init_params(cfg, generator=None, dtype=torch.float32):
    """The spec initialisation (MODEL.md "Parameters"): returns a fresh dict name -> tensor."""
    out = {}
    for name, shape, group in param_specs(cfg):
        short = name.split(".")[-1]
        if group == "gain":
            t = torch.ones(shape, dtype=dtype)
        elif short in ("wo", "w_down", "head"):
            t = torch.zeros(shape, dtype=dtype)
        else:
            std = 1.0 if (name == "emb" and not cfg.tied) else 1.0 / math.sqrt(shape[1])
            t = torch.randn(shape, generator=generator, dtype=dtype) * std
        out[name] = t
    return out


def rmsnorm(x, gain, eps):
    """y = x / sqrt(mean(x², last dim) + eps) * gain (gain None = no gain)."""
    y = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    return y if gain is None else y * gain


def rope_tables(cfg, T, dtype, device=None):
    """cos, sin of shape (T, rot_dim/2): angle t·base^(−2j/rot_dim). Computed in float64, then cast."""
    half = cfg.rot_dim // 2
    j = torch.arange(half, dtype=torch.float64, device=device)
    inv = cfg.rope_base ** (-2.0 * j / cfg.rot_dim) if half else j
    ang = torch.arange(T, dtype=torch.float64, device=device)[:, None] * inv[None, :]
    return torch.cos(ang).to(dtype), torch.sin(ang).to(dtype)


def apply_rope(x, cos, sin):
    """x: (B,T,heads,hd); rotates channel j with j + rot_dim/2 for j < rot_dim/2; the rest pass through."""
    half = cos.shape[1]
    if half == 0:
        return x
    x1, x2, rest = x[..., :half], x[..., half:2 * half], x[..., 2 * half:]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c, rest], dim=-1)


def causal_attention(q, k, v):
    """q: (B,T,H,hd), k, v: (B,T,Hkv,hd) -> (B,T,H·hd). Query head h reads KV head h // (H/Hkv)."""
    B, T, H, hd = q.shape
    Hkv = k.shape[2]
    G = H // Hkv
    qg = q.permute(0, 2, 1, 3).reshape(B, Hkv, G * T, hd)      # row g·T + t of KV group = head kvh·G + g
    kt = k.permute(0, 2, 3, 1)                                    # (B,Hkv,hd,T)
    vv = v.permute(0, 2, 1, 3)                                    # (B,Hkv,T,hd)
    s = torch.matmul(qg, kt).view(B, Hkv, G, T, T) * (1.0 / math.sqrt(hd))
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    s = s.masked_fill(mask, float("-inf"))
    p = torch.softmax(s, dim=-1).view(B, Hkv, G * T, T)
    a = torch.matmul(p, vv).view(B, H, T, hd)
    return a.permute(0, 2, 1, 3).reshape(B, T, H * hd)


def forward(cfg, params, tokens, rope=None):
    """tokens: int64 (B,T+1). Returns (z (B,T,V) logits after soft-cap, scalar mean loss).

    `rope` optionally passes precomputed rope_tables(cfg, T, ...) to avoid recomputing them each step."""
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    B, T = inputs.shape
    hd, H, Hkv = cfg.head_dim, cfg.heads, cfg.kv_heads
    emb = params["emb"]
    cos, sin = rope if rope is not None else rope_tables(cfg, T, emb.dtype, emb.device)
    x = F.embedding(inputs, emb)
    for i in range(cfg.layers):
        p = lambda n: params[f"l{i}.{n}"]  # noqa: E731
        h = rmsnorm(x, p("attn_norm"), 1e-5)
        q = F.linear(h, p("wq")).view(B, T, H, hd)
        k = F.linear(h, p("wk")).view(B, T, Hkv, hd)
        v = F.linear(h, p("wv")).view(B, T, Hkv, hd)
        if cfg.qknorm:
            q, k = rmsnorm(q, None, 1e-6), rmsnorm(k, None, 1e-6)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        x = x + F.linear(causal_attention(q, k, v), p("wo"))
        h = rmsnorm(x, p("mlp_norm"), 1e-5)
        u = F.linear(h, p("w_up"))
        if cfg.mlp == "relu2":
            u = torch.relu(u).square()
        elif cfg.mlp == "gelu":
            u = F.gelu(u, approximate="none")
        else:
            u = F.silu(F.linear(h, p("w_gate"))) * u
        x = x + F.linear(u, p("w_down"))
    h = rmsnorm(x, params["norm_f"], 1e-5)
    z = F.linear(h, emb if cfg.tied else params["head"])
    if cfg.softcap:
        z = cfg.softcap * torch.tanh(z / cfg.softcap)
    loss = F.cross_entropy(z.reshape(B * T, -1), targets.reshape(-1))
    return z, loss
