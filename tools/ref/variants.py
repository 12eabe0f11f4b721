"""Independent PyTorch reference of sextant's architecture variants, written from docs/MODEL.md ("Variants").

Responsible for: parsing descriptors with the variant options (attention gate per head or per channel,
exclusive self attention, bigram hash embedding with signs, value embeddings, smear, GatedNorm, DC-MHA on the last layer, sliding window with a local/global layer pattern, attention soft-cap, MLA, MoE FFN) on top of tools/ref/model.py's parser, their
parameter table, the forward pass (logits, and the training objective = cross-entropy + MoE auxiliary
loss). Same interface as model.py (parse_descriptor, param_specs, forward) so the fixture machinery of
make_fixtures.py runs unchanged on it. Reuses model.py's rmsnorm, RoPE and dense parser; the attention here is
a direct masked softmax written independently of the C kernel.
Not responsible for: optimizers or files (make_fixtures.py, tensorfile.py).

Routing is discontinuous: every forward records the smallest gap between the k-th and (k+1)-th selection
score (min_route_margin) so the fixture script can refuse batches whose routing fp32 could flip.
"""
import math
import re
from dataclasses import dataclass

import torch
import torch.nn.functional as F

import model

_NUM = model._NUM
min_route_margin = math.inf


@dataclass(frozen=True)
class VConfig:
    """model.Config plus the variant options; unknown attributes fall through to the base config."""
    base: model.Config
    gate: bool = False
    egate: bool = False
    xsa: bool = False
    bigram: int = 0
    bsign: int = 0
    ve: int = 0
    dcmha: int = 0
    smear: bool = False
    window: int = 0
    local_every: int = 0
    attcap: float = 0.0
    mla: bool = False
    dc: int = 0
    dcq: int = 0
    rope_dims: int = 0
    nope: int = 0
    latnorm: bool = True
    experts: int = 0
    top_k: int = 0
    expert_ff: int = 0
    shared: int = 0
    sigmoid: bool = False
    aux: float = 0.0
    bias: bool = False
    gnorm: int = 0
    qb: bool = False
    fp8: bool = False

    def __getattr__(self, name):
        if name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)

    @property
    def rot_dim(self):
        """Channels RoPE rotates: the decoupled rope dims for MLA, else the base rule."""
        return self.rope_dims if self.mla else self.base.rot_dim

    def is_local(self, layer):
        """Layer uses the sliding window unless it is every local_every-th (global) layer."""
        return self.window > 0 and not (self.local_every and layer % self.local_every == self.local_every - 1)


_FLAGS = {"smear": ("smear", True), "gate": ("gate", True), "egate": ("egate", True), "xsa": ("xsa", True), "mla": ("mla", True), "nolatnorm": ("latnorm", False),
          "sigmoid": ("sigmoid", True), "balance=bias": ("bias", True),
          "balance=qb": ("qb", True), "fp8": ("fp8", True)}
_NUMERIC = [(r"attcap" + _NUM, "attcap", float), (r"swa(\d+)", "window", int),
            (r"bigram(\d+)", "bigram", int), (r"bsign(\d+)", "bsign", int), (r"ve(\d+)", "ve", int), (r"dcmha(\d+)", "dcmha", int), (r"local(\d+)", "local_every", int),
            (r"dcq(\d+)", "dcq", int), (r"dc(\d+)", "dc", int), (r"rd(\d+)", "rope_dims", int),
            (r"nope(\d+)", "nope", int), (r"ew(\d+)", "expert_ff", int), (r"shared(\d+)", "shared", int),
            (r"aux" + _NUM, "aux", float), (r"gnorm(\d+)", "gnorm", int)]


def parse_descriptor(desc):
    """Returns the VConfig of `desc`; raises ValueError on anything malformed."""
    parts = desc.split("-")
    rest, opt, given = [parts[0]], {}, set()
    for p in parts[1:]:
        m = re.fullmatch(r"moe(\d+)k(\d+)", p)
        if p in _FLAGS:
            opt[_FLAGS[p][0]] = _FLAGS[p][1]
        elif m:
            opt["experts"], opt["top_k"] = int(m.group(1)), int(m.group(2))
        else:
            for pat, key, conv in _NUMERIC:
                m = re.fullmatch(pat, p)
                if m:
                    opt[key] = conv(m.group(1))
                    given.add(key)
                    break
            else:
                rest.append(p)
    base = model.parse_descriptor("-".join(rest))
    if "bsign" in opt and not opt.get("bigram"):
        raise ValueError(f"descriptor {desc!r}: bsign needs bigram")
    if opt.get("bigram"):
        opt.setdefault("bsign", 8192)
    if "ve" in opt and (opt.get("mla") or not 1 <= opt["ve"] <= base.layers // 2):
        raise ValueError(f"descriptor {desc!r}: ve<N> needs the GQA mixer and 1 <= N <= layers/2")
    if "dcmha" in opt and (opt.get("mla") or not 1 <= opt["dcmha"] <= 1024):
        raise ValueError(f"descriptor {desc!r}: dcmha<W> needs the GQA mixer and 1 <= W <= 1024")
    if opt.get("mla"):
        if any(re.fullmatch(r"(kv\d+|qknorm|ropefrac.*)", p) for p in rest):
            raise ValueError(f"descriptor {desc!r}: kv/qknorm/ropefrac do not apply to mla")
        hd = base.head_dim
        opt.setdefault("rope_dims", hd // 2 // 2 * 2)
        opt.setdefault("nope", hd - opt["rope_dims"])
        opt.setdefault("dc", 4 * hd)
    if opt.get("experts"):
        if not 1 <= opt["top_k"] <= opt["experts"]:
            raise ValueError(f"descriptor {desc!r}: need 1 <= k <= experts")
        if opt.get("qb") and (opt.get("bias") or opt["top_k"] >= opt["experts"]):
            raise ValueError(f"descriptor {desc!r}: balance=qb needs k < experts and no balance=bias")
        opt.setdefault("expert_ff", base.ff)
    return VConfig(base=base, **opt)


def _mixer_specs(cfg, i):
    C, H, hd = cfg.width, cfg.heads, cfg.head_dim
    if not cfg.mla:
        s = [("wq", (H * hd, C)), ("wk", (cfg.kv_heads * hd, C)), ("wv", (cfg.kv_heads * hd, C)), ("wo", (C, H * hd))]
        out = [(f"l{i}.{n}", sh, "matrix") for n, sh in s]
    else:
        dqk, out = cfg.rope_dims + cfg.nope, []
        if cfg.dcq:
            out.append((f"l{i}.wdq", (cfg.dcq, C), "matrix"))
            if cfg.latnorm:
                out.append((f"l{i}.q_norm", (cfg.dcq,), "gain"))
            out.append((f"l{i}.wuq", (H * dqk, cfg.dcq), "matrix"))
        else:
            out.append((f"l{i}.wq", (H * dqk, C), "matrix"))
        out.append((f"l{i}.wdkv", (cfg.dc, C), "matrix"))
        if cfg.latnorm:
            out.append((f"l{i}.kv_norm", (cfg.dc,), "gain"))
        if cfg.rope_dims:
            out.append((f"l{i}.wkr", (cfg.rope_dims, C), "matrix"))
        if cfg.nope:
            out.append((f"l{i}.wuk", (H * cfg.nope, cfg.dc), "matrix"))
        out += [(f"l{i}.wuv", (H * hd, cfg.dc), "matrix"), (f"l{i}.wo", (C, H * hd), "matrix")]
    if cfg.gate or cfg.egate:
        out.append((f"l{i}.wg", (H * hd if cfg.egate else H, C), "matrix"))
    return out


def _mlp_specs(cfg, prefix, width):
    C = cfg.width
    names = (["w_gate"] if cfg.mlp == "swiglu" else []) + ["w_up"]
    return [(f"{prefix}.{n}", (width, C), "matrix") for n in names] + [(f"{prefix}.w_down", (C, width), "matrix")]


FP8_HISTORY, FP8_ROLES = 16, 5   # amax history rows; columns x, a, w[0], w[1], w[2] (docs/MODEL.md "fp8")


def _ffn_specs(cfg, i):
    if not cfg.experts:
        return _mlp_specs(cfg, f"l{i}", cfg.ff) + ([(f"l{i}.fp8_amax", (FP8_HISTORY, FP8_ROLES), "gain")] if cfg.fp8 else [])
    out = [(f"l{i}.router", (cfg.experts, cfg.width), "embed")]
    if cfg.bias or cfg.qb:
        out.append((f"l{i}.router_bias", (cfg.experts,), "gain"))
    for e in range(cfg.experts):
        out += _mlp_specs(cfg, f"l{i}.e{e}", cfg.expert_ff)
    if cfg.shared:
        out += _mlp_specs(cfg, f"l{i}.shared", cfg.shared * cfg.expert_ff)
    return out


def param_specs(cfg):
    """List of (name, shape, group) in checkpoint/optimizer order (MODEL.md tables)."""
    C = cfg.width
    specs = [("emb", (cfg.vocab, C), "embed")]
    if cfg.bigram:
        specs.append(("bigram", (cfg.bigram, C), "embed"))
    specs += [(f"ve{k}", (cfg.vocab, cfg.kv_heads * cfg.head_dim), "embed") for k in range(cfg.ve)]
    if cfg.ve:
        specs.append(("ve_gate", (2 * cfg.ve * cfg.kv_heads, 12), "gain"))
    if cfg.smear:
        specs += [("smear_gate", (12,), "gain"), ("smear_lambda", (1,), "gain")]
    if cfg.dcmha:
        specs += [("dc_w1", (cfg.heads, C), "matrix"), ("dc_w2", (cfg.heads, C), "matrix")]
    for i in range(cfg.layers):
        specs += [(f"l{i}.attn_norm", (C,), "gain")] + _mixer_specs(cfg, i)
        specs += [(f"l{i}.mlp_norm", (C,), "gain")] + _ffn_specs(cfg, i)
    specs.append(("norm_f", (C,), "gain"))
    if not cfg.tied:
        specs.append(("head", (cfg.vocab, C), "head"))
    for norm in gate_sites(cfg):   # GatedNorm's matrices close the table
        specs += [(f"{norm}.gn_down", (cfg.gnorm, C), "matrix"), (f"{norm}.gn_up", (C, cfg.gnorm), "matrix")]
    return specs


def gate_sites(cfg):
    """The norms GatedNorm follows (gnorm<R>), in table order: each layer's attn_norm and mlp_norm, then norm_f."""
    if not cfg.gnorm:
        return []
    return [f"l{i}.{n}" for i in range(cfg.layers) for n in ("attn_norm", "mlp_norm")] + ["norm_f"]


def norm(cfg, params, x, name):
    """rmsnorm(x, params[name], 1e-5), then with gnorm<R> GatedNorm: y = x̂ ⊙ σ(SiLU(x̂·W_downᵀ)·W_upᵀ)."""
    h = model.rmsnorm(x, params[name], 1e-5)
    if not cfg.gnorm:
        return h
    return h * torch.sigmoid(F.linear(F.silu(F.linear(h, params[f"{name}.gn_down"])), params[f"{name}.gn_up"]))


def attention(q, k, v, scale, window, softcap):
    """q, k (B,T,·,Dqk), v (B,T,Hkv,Dv) -> (B,T,H,Dv); causal, keys t-window+1..t if window, tanh logit cap."""
    T, H, Hkv = q.shape[1], q.shape[2], k.shape[2]
    k, v = k.repeat_interleave(H // Hkv, dim=2), v.repeat_interleave(H // Hkv, dim=2)
    s = torch.einsum("bthd,bshd->bhts", q, k) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    mask = (j > i) | ((j <= i - window) if window else torch.zeros(T, T, dtype=torch.bool))
    p = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)
    return torch.einsum("bhts,bshd->bthd", p, v)


def value_embedding(cfg, params, i, inputs):
    """Layer i's (table rows (B,T,Hkv·hd), gate rows (Hkv,12)), or None (MODEL.md "Value embeddings"): table k
    feeds layers k and L-N+k; the gate rows are slot-major in ve_gate, the early layers' slots first."""
    N, L, Hkv = cfg.ve, cfg.layers, cfg.kv_heads
    if i < N:
        slot = i
    elif N and i >= L - N:
        slot = N + i - (L - N)
    else:
        return None
    return F.embedding(inputs, params[f"ve{slot % N}"]), params["ve_gate"][slot * Hkv:(slot + 1) * Hkv]


def _gqa(cfg, p, h, cos, sin, ve=None):
    B, T, _ = h.shape
    H, Hkv, hd = cfg.heads, cfg.kv_heads, cfg.head_dim
    q = F.linear(h, p("wq")).view(B, T, H, hd)
    k = F.linear(h, p("wk")).view(B, T, Hkv, hd)
    v = F.linear(h, p("wv")).view(B, T, Hkv, hd)
    if ve is not None:   # v += 2·σ(w·[h[:6]; e[:6]]) · e per KV head
        e, w = ve
        gamma = 2 * torch.sigmoid(F.linear(torch.cat([h[..., :6], e[..., :6]], dim=-1), w))
        v = v + gamma[..., None] * e.view(B, T, Hkv, hd)
    if cfg.qknorm:
        q, k = model.rmsnorm(q, None, 1e-6), model.rmsnorm(k, None, 1e-6)
    return model.apply_rope(q, cos, sin), model.apply_rope(k, cos, sin), v, hd


def _mla(cfg, p, h, cos, sin):
    B, T, _ = h.shape
    H, rd, nd = cfg.heads, cfg.rope_dims, cfg.nope
    if cfg.dcq:
        cq = F.linear(h, p("wdq"))
        if cfg.latnorm:
            cq = model.rmsnorm(cq, p("q_norm"), 1e-6)
        q = F.linear(cq, p("wuq"))
    else:
        q = F.linear(h, p("wq"))
    q = model.apply_rope(q.view(B, T, H, rd + nd), cos, sin)       # rope part first in each head
    ckv = F.linear(h, p("wdkv"))
    if cfg.latnorm:
        ckv = model.rmsnorm(ckv, p("kv_norm"), 1e-6)
    parts = []
    if rd:
        parts.append(model.apply_rope(F.linear(h, p("wkr")).view(B, T, 1, rd), cos, sin).expand(B, T, H, rd))
    if nd:
        parts.append(F.linear(ckv, p("wuk")).view(B, T, H, nd))
    v = F.linear(ckv, p("wuv")).view(B, T, H, cfg.head_dim)
    return q, torch.cat(parts, dim=-1), v, rd + nd


def dcmha(cfg, w1, w2, h, q, k, v):
    """DC-MHA's addition to the attention output (B,T,H,hd) (MODEL.md "DC-MHA"): per-head maps over the last
    `dcmha` keys (plain softmax of q·k/sqrt(hd)), mixed by w1 = RMS-normalised h·dc_w1ᵀ, times the values, scaled
    per head by h·dc_w2ᵀ."""
    T, H, Hkv, hd = q.shape[1], q.shape[2], k.shape[2], q.shape[3]
    k, v = k.repeat_interleave(H // Hkv, dim=2), v.repeat_interleave(H // Hkv, dim=2)
    s = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(hd)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    P = torch.softmax(s.masked_fill((j > i) | (j <= i - cfg.dcmha), float("-inf")), dim=-1)
    u1, u2 = F.linear(h, w1), F.linear(h, w2)
    mix = u1 / torch.sqrt((u1 * u1).mean(-1, keepdim=True) + 1e-6)
    a = torch.einsum("bth,bhts->bts", mix, P)
    # The mixed map reads each head's own values (its KV head's); the per-head scale u2 multiplies the result.
    return u2[..., None] * torch.einsum("bts,bshd->bthd", a, v)


def _mixer(cfg, i, p, h, cos, sin, ve=None, dc=None):
    B, T, _ = h.shape
    q, k, v, dqk = _mla(cfg, p, h, cos, sin) if cfg.mla else _gqa(cfg, p, h, cos, sin, ve)
    o = attention(q, k, v, 1.0 / math.sqrt(dqk), cfg.window if cfg.is_local(i) else 0, cfg.attcap)
    if dc is not None:
        o = o + dcmha(cfg, dc[0], dc[1], h, q, k, v)
    if cfg.xsa:      # drop each head's component along its own position's value (the KV head it reads)
        vh = v.repeat_interleave(o.shape[2] // v.shape[2], dim=2)
        o = o - ((o * vh).sum(-1, keepdim=True) / ((vh * vh).sum(-1, keepdim=True) + 1e-6)) * vh
    if cfg.egate:
        o = o * torch.sigmoid(F.linear(h, p("wg"))).view(o.shape)
    elif cfg.gate:
        o = o * torch.sigmoid(F.linear(h, p("wg")))[..., None]
    return F.linear(o.reshape(B, T, -1), p("wo"))


def _mlp(cfg, get, h):
    """Dense MLP; get(short name) returns its w_gate / w_up / w_down."""
    u = F.linear(h, get("w_up"))
    if cfg.mlp == "relu2":
        u = torch.relu(u).square()
    elif cfg.mlp == "gelu":
        u = F.gelu(u, approximate="none")
    else:
        u = F.silu(F.linear(h, get("w_gate"))) * u
    return F.linear(u, get("w_down"))


def e4m3_round(x):
    """Nearest OCP e4m3 value (3 mantissa bits, exponents >= -6 with subnormals below, saturating at ±448),
    ties to even (torch.round rounds half to even); NaN stays NaN."""
    a = x.abs()
    e = torch.floor(torch.log2(torch.where(a > 0, a, torch.ones_like(a)))).clamp(min=-6)
    q = torch.pow(2.0, e - 3).to(x.dtype)
    r = torch.round(a / q) * q
    return torch.sign(x) * torch.clamp(r, max=448.0)


def _fp8(v, history, role):
    """v rounded to e4m3 at the power-of-two scale of its role (history's largest amax, or v's own while the
    column is zero), straight-through: forward the rounded value, gradient 1."""
    h = float(history[:, role].max())
    amax = h if h > 0 else float(v.detach().abs().max())
    s = 1.0 if amax <= 0 else 2.0 ** math.floor(math.log2(448.0 / amax))
    if amax * s > 448.0:
        s /= 2
    q = e4m3_round(v.detach() * s) / s
    return v + (q - v.detach())


def _mlp_fp8(cfg, get, h, history):
    """The dense MLP with every product's operands through _fp8 (roles: x 0, a 1, weights 2..)."""
    names = (["w_gate"] if cfg.mlp == "swiglu" else []) + ["w_up", "w_down"]
    w = {n: _fp8(get(n), history, 2 + i) for i, n in enumerate(names)}
    x = _fp8(h, history, 0)
    u = F.linear(x, w["w_up"])
    if cfg.mlp == "relu2":
        a = torch.relu(u).square()
    elif cfg.mlp == "gelu":
        a = F.gelu(u, approximate="none")
    else:
        a = F.silu(F.linear(x, w["w_gate"])) * u
    return F.linear(_fp8(a, history, 1), w["w_down"]) + 0.0 * history.sum()


def _moe(cfg, p, h):
    """Returns (output, auxiliary loss). Every expert runs on every token; unrouted tokens have weight 0."""
    global min_route_margin
    E, K = cfg.experts, cfg.top_k
    u = F.linear(h, p("router"))
    s = torch.sigmoid(u) if cfg.sigmoid else torch.softmax(u, dim=-1)
    sel = (s + p("router_bias")) if cfg.bias else (u + p("router_bias")) if cfg.qb else s   # QB: on the logits
    ranked = torch.sort(sel.detach(), dim=-1, descending=True).values
    if K < E:
        min_route_margin = min(min_route_margin, float((ranked[..., K - 1] - ranked[..., K]).min()))
    idx = torch.topk(sel.detach(), K, dim=-1).indices
    chosen = s.gather(-1, idx)
    w = chosen / chosen.sum(dim=-1, keepdim=True)
    out = _mlp(cfg, lambda n: p(f"shared.{n}"), h) if cfg.shared else torch.zeros_like(h)
    counts = []
    for e in range(E):
        hit = (idx == e)
        out = out + (w * hit).sum(-1, keepdim=True) * _mlp(cfg, lambda n, e=e: p(f"e{e}.{n}"), h)
        counts.append(hit.sum())
    n = h.shape[0] * h.shape[1]
    f = torch.stack(counts).to(h.dtype) / (K * n)
    P = (s / s.sum(dim=-1, keepdim=True)).reshape(n, E).mean(dim=0)
    aux = cfg.aux * E * (f * P).sum()
    if cfg.bias or cfg.qb:             # the bias has no gradient; keep it in the graph with a zero one
        aux = aux + 0.0 * p("router_bias").sum()
    return out, aux


def qb_step(u, b, K):
    """One Quantile Balancing step (docs/MODEL.md, "MoE FFN"), written from ARCH-FEATURES F25 with sorts.
    u (T,E) logits, b (E) bias, all float32. Returns (idx (T,K) chosen experts in descending order of u + b,
    ties to the lower index; alpha (T) the (K+1)-th largest u + b; beta (E) the max(1, T·K/E)-th largest of
    u − alpha per column; the next bias −beta centred)."""
    T, E = u.shape
    sel = u + b
    idx, alpha = [], []
    for t in range(T):
        order = sorted(range(E), key=lambda e: (-float(sel[t, e]), e))
        idx.append(order[:K])
        alpha.append(sel[t, order[K]])
    alpha = torch.stack(alpha)
    m = u - alpha[:, None]
    k = max(1, T * K // E)
    beta = torch.sort(m, dim=0, descending=True).values[k - 1]
    nb = (beta.double().mean() - beta.double()).float()
    return torch.tensor(idx, dtype=torch.int32), alpha, beta, nb


def _int32(x):
    """Python ints wrapped to int32 (two's complement), as a tensor product of int32 values wraps."""
    return (x + 2**31) % 2**32 - 2**31


def _fmix32(h):
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def bigram_embedding(cfg, table, inputs):
    """(B,T,C): table[row] ⊙ sign(pattern) per position (MODEL.md "Bigram hash embedding")."""
    B, T = inputs.shape
    R, S, C = cfg.bigram, cfg.bsign, table.shape[1]
    rows, signs = [], []
    for b in range(B):
        for t in range(T):
            x = int(inputs[b, t])
            if t == 0:
                row, p = R - 1, 0
            else:
                p = int(inputs[b, t - 1])
                row = (_int32(36313 * x) ^ _int32(27191 * p)) % (R - 1)   # Python's % is the floor modulo
            pat = (p ^ x) % S if S else None
            rows.append(row)
            signs.append([1.0 if pat is None or not _fmix32((pat * 0x9E3779B1 + c) & 0xFFFFFFFF) & 1 else -1.0
                          for c in range(C)])
    sign = torch.tensor(signs, dtype=table.dtype).view(B, T, C)
    return table[torch.tensor(rows)].view(B, T, C) * sign


def forward(cfg, params, tokens, rope=None):
    """tokens int64 (B,T+1). Returns (z (B,T,V) logits after soft-cap, cross-entropy + auxiliary loss)."""
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    B, T = inputs.shape
    emb = params["emb"]
    cos, sin = rope if rope is not None else model.rope_tables(cfg, T, emb.dtype, emb.device)
    x = F.embedding(inputs, emb)
    if cfg.bigram:
        x = x + bigram_embedding(cfg, params["bigram"], inputs)
    if cfg.smear:    # x_t += λ·σ(w·x_t[:12])·x_{t-1} for t >= 1
        s = torch.sigmoid(x[:, 1:, :12] @ params["smear_gate"])
        x = torch.cat([x[:, :1], x[:, 1:] + params["smear_lambda"] * s[..., None] * x[:, :-1]], dim=1)
    aux = 0.0
    for i in range(cfg.layers):
        p = lambda n, i=i: params[f"l{i}.{n}"]  # noqa: E731
        ve = value_embedding(cfg, params, i, inputs)
        dc = (params["dc_w1"], params["dc_w2"]) if cfg.dcmha and i == cfg.layers - 1 else None
        x = x + _mixer(cfg, i, p, norm(cfg, params, x, f"l{i}.attn_norm"), cos, sin, ve, dc)
        h = norm(cfg, params, x, f"l{i}.mlp_norm")
        if cfg.experts:
            y, a = _moe(cfg, p, h)
            x, aux = x + y, aux + a
        elif cfg.fp8:
            x = x + _mlp_fp8(cfg, p, h, p("fp8_amax"))
        else:
            x = x + _mlp(cfg, p, h)
    h = norm(cfg, params, x, "norm_f")
    z = F.linear(h, emb if cfg.tied else params["head"])
    if cfg.softcap:
        z = cfg.softcap * torch.tanh(z / cfg.softcap)
    return z, F.cross_entropy(z.reshape(B * T, -1), targets.reshape(-1)) + aux
