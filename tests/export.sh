#!/usr/bin/env bash
# Models that leave the tool (issue 23): `export` writes a checkpoint as Llama-named safetensors + an
# HF-style config.json and `import-weights` reads it back bit for bit. The files are checked by an
# independent reader (Python: json + struct, zlib for the crc) that also reads the .sxt checkpoint from
# its documented layout: names, shapes, dtypes, every value against the checkpoint, the data checksum and
# the config fields. Also: a BF16 Llama file from another writer (no sextant metadata) imports through its
# config.json; variants with no Llama equivalent, a damaged file and a misfit config are refused clearly.
set -u
S=${SEXTANT:-./sextant}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
train() { "$S" train --model "$1" --train synthetic:64 --batch 2 --seq 16 --steps 3 --out "$tmp/$2" --quiet > /dev/null 2>&1 || fail "train $1"; }

# An independent reader: python3 reader.py SXT SAFETENSORS CONFIG TIED -> checks, prints a checksum.
cat > "$tmp/reader.py" <<'PY'
import json, struct, sys, zlib
sxt_path, st_path, cfg_path, tied = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "tied"
def sxt(path):                                    # docs/FORMATS.md, "Tensor file"
    b = open(path, "rb").read()
    assert b[:8] == b"SXTENSOR" and b[-4:] == b"SXEN", "sxt magic"
    (jlen,) = struct.unpack_from("<Q", b, 16)
    head = json.loads(b[24:24 + jlen])
    data = (24 + jlen + 63) // 64 * 64
    return head, {t["name"]: (t["shape"], b[data + t["offset"]: data + t["offset"] + t["nbytes"]]) for t in head["tensors"]}
def safetensors(path):
    b = open(path, "rb").read()
    (n,) = struct.unpack_from("<Q", b, 0)
    head = json.loads(b[8:8 + n])
    meta = head.pop("__metadata__", {})
    return meta, head, b[8 + n:]
ck_head, ck = sxt(sxt_path)
meta, head, data = safetensors(st_path)
cfg = json.load(open(cfg_path))
mc = ck_head["meta"]["model"]
assert meta["sextant_descriptor"] == mc["descriptor"] and meta["format"] == "pt", meta
assert int(meta["sextant_crc32"]) == zlib.crc32(data), "data checksum"
L, C, V = mc["layers"], mc["width"], mc["vocab"]
H, K, hd, F = mc["heads"], mc["kv_heads"], mc["head_dim"], mc["ffn_hidden"]
want = {"model.embed_tokens.weight": ("emb", [V, C]), "model.norm.weight": ("norm_f", [C])}
if not tied: want["lm_head.weight"] = ("head", [V, C])
gated = mc["mlp"] == "swiglu"
for i in range(L):
    p = f"model.layers.{i}."
    want[p + "input_layernorm.weight"] = (f"l{i}.attn_norm", [C])
    want[p + "self_attn.q_proj.weight"] = (f"l{i}.wq", [H * hd, C])
    want[p + "self_attn.k_proj.weight"] = (f"l{i}.wk", [K * hd, C])
    want[p + "self_attn.v_proj.weight"] = (f"l{i}.wv", [K * hd, C])
    want[p + "self_attn.o_proj.weight"] = (f"l{i}.wo", [C, H * hd])
    want[p + "post_attention_layernorm.weight"] = (f"l{i}.mlp_norm", [C])
    if gated: want[p + "mlp.gate_proj.weight"] = (f"l{i}.w_gate", [F, C])
    want[p + "mlp.up_proj.weight"] = (f"l{i}.w_up", [F, C])
    want[p + "mlp.down_proj.weight"] = (f"l{i}.w_down", [C, F])
assert sorted(head) == sorted(want), f"names: {sorted(set(head) ^ set(want))}"
total = 0.0
for name, (sx, shape) in want.items():
    e = head[name]
    assert e["dtype"] == "F32" and e["shape"] == shape, f"{name}: {e['dtype']} {e['shape']}, want F32 {shape}"
    b, end = e["data_offsets"]
    raw = data[b:end]
    assert raw == ck["param." + sx][1], f"{name} differs from the checkpoint's param.{sx}"
    total += sum(struct.unpack(f"<{len(raw) // 4}f", raw))
for k, v in {"hidden_size": C, "num_hidden_layers": L, "num_attention_heads": H, "num_key_value_heads": K, "head_dim": hd,
             "intermediate_size": F, "vocab_size": V, "tie_word_embeddings": tied, "rms_norm_eps": 1e-5,
             "hidden_act": {"swiglu": "silu", "relu2": "relu2", "gelu": "gelu"}[mc["mlp"]], "mlp_gated": gated}.items():
    assert cfg[k] == v, f"config.json {k} = {cfg[k]!r}, want {v!r}"
assert ("architectures" in cfg) == gated and cfg["model_type"] == ("llama" if gated else "sextant_llama_nongated")
print(f"{len(want)} tensors, sum of values {total:.9g}")
PY

# Two members of the family: GQA + SwiGLU + untied head (a stock LlamaForCausalLM), and MHA + ReLU² tied.
train d2-w32-hd8-kv2-swiglu-untied-v64 gqa
train d1-w32-hd16-relu2-rope500000-v64 relu
train d1-w32-hd16-relu2 plain   # its vocabulary from the data, not the descriptor (import read 8192, the default)
for m in gqa:untied relu:tied plain:tied; do
    run=${m%%:*}
    "$S" export --format safetensors "$tmp/$run/checkpoint.sxt" "$tmp/hf-$run/model.safetensors" > "$tmp/$run.log" || { fail "export $run"; cat "$tmp/$run.log"; }
    python3 "$tmp/reader.py" "$tmp/$run/checkpoint.sxt" "$tmp/hf-$run/model.safetensors" "$tmp/hf-$run/config.json" "${m#*:}" \
        > "$tmp/$run.read" 2>&1 || { fail "independent reader on $run"; cat "$tmp/$run.read"; }
    cat "$tmp/$run.read"
    "$S" import-weights "$tmp/hf-$run/model.safetensors" "$tmp/$run-back.sxt" > /dev/null || fail "import $run"
    # Round trip: the re-imported checkpoint holds the very same weights (its own reader sees equal bytes).
    python3 "$tmp/reader.py" "$tmp/$run-back.sxt" "$tmp/hf-$run/model.safetensors" "$tmp/hf-$run/config.json" "${m#*:}" \
        > /dev/null 2>&1 || fail "round trip $run: weights differ"
    a=$("$S" sample --checkpoint "$tmp/$run/checkpoint.sxt" --ids --prompt 1,2,3 --max-new 12 --temperature 0 2>&1)
    b=$("$S" sample --checkpoint "$tmp/$run-back.sxt" --ids --prompt 1,2,3 --max-new 12 --temperature 0 2>&1)
    [ -n "$a" ] && [ "$a" = "$b" ] || fail "round trip $run: greedy samples differ ('$a' vs '$b')"
done
# import-weights replaces no file: a run's training checkpoint would lose its optimizer state (before: overwritten).
out=$("$S" import-weights "$tmp/hf-plain/model.safetensors" "$tmp/plain/checkpoint.sxt" 2>&1) && fail "import over a checkpoint"
echo "$out" | grep -q "plain/checkpoint.sxt exists: import-weights writes a new checkpoint and replaces none" || fail "import over: $out"
# Exported into the run's own directory, the HF config.json would replace the run's: refused, nothing written.
cp "$tmp/plain/config.json" "$tmp/plain.config"
out=$("$S" export "$tmp/plain/checkpoint.sxt" "$tmp/plain/model.safetensors" 2>&1) && fail "export over a run's config.json accepted"
echo "$out" | grep -q "plain/config.json is not an HF config.json (a sextant run's own?)" && cmp -s "$tmp/plain/config.json" "$tmp/plain.config" &&
    [ ! -e "$tmp/plain/model.safetensors" ] || fail "export into the run's directory: $out"
grep -q '"max_position_embeddings": 16' "$tmp/hf-gqa/config.json" || fail "context from the run's seq"
grep -q '"rope_theta": 500000' "$tmp/hf-relu/config.json" || fail "rope base"

# Another writer's file: BF16, no sextant metadata, its config.json beside it (lm_head kept though tied).
python3 - "$tmp/hf-relu" "$tmp/foreign" <<'PY'
import json, os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
b = open(src + "/model.safetensors", "rb").read()
(n,) = struct.unpack_from("<Q", b, 0)
head = json.loads(b[8:8 + n]); head.pop("__metadata__")
data = b[8 + n:]
out, blob = {}, b""
names = list(head) + ["lm_head.weight"]
for name in names:
    e = head[name if name in head else "model.embed_tokens.weight"]
    raw = data[e["data_offsets"][0]:e["data_offsets"][1]]
    bf = b"".join(raw[i + 2:i + 4] for i in range(0, len(raw), 4))      # BF16: the high half of each F32
    out[name] = {"dtype": "BF16", "shape": e["shape"], "data_offsets": [len(blob), len(blob) + len(bf)]}
    blob += bf
h = json.dumps(out).encode(); h += b" " * (-len(h) % 8)
os.makedirs(dst, exist_ok=True)
open(dst + "/model.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + blob)
cfg = json.load(open(src + "/config.json")); del cfg["sextant_descriptor"]
json.dump(cfg, open(dst + "/config.json", "w"))
PY
"$S" import-weights "$tmp/foreign/model.safetensors" "$tmp/foreign.sxt" > "$tmp/foreign.log" 2>&1 || { fail "BF16 import"; cat "$tmp/foreign.log"; }
"$S" export "$tmp/foreign.sxt" "$tmp/hf-foreign/model.safetensors" > /dev/null || fail "export of the imported model"
python3 - "$tmp/hf-relu/model.safetensors" "$tmp/hf-foreign/model.safetensors" <<'PY' || fail "BF16 values not widened exactly"
import json, struct, sys
def load(p):
    b = open(p, "rb").read(); (n,) = struct.unpack_from("<Q", b, 0); h = json.loads(b[8:8 + n]); h.pop("__metadata__")
    return {k: b[8 + n + v["data_offsets"][0]: 8 + n + v["data_offsets"][1]] for k, v in h.items()}
a, b = load(sys.argv[1]), load(sys.argv[2])
assert sorted(a) == sorted(b)
for k in a:
    want = b"".join(b"\0\0" + a[k][i + 2:i + 4] for i in range(0, len(a[k]), 4))
    assert b[k] == want, k
PY

# Refusals, each naming the reason.
train d1-w32-hd8-mla-v64 mla
train d1-w32-hd8-moe4k2-v64 moe
"$S" export "$tmp/mla/checkpoint.sxt" "$tmp/x/m.safetensors" 2>&1 | grep -q "has multi-head latent attention (mla), which a Llama-style model cannot express" || fail "MLA refusal"
"$S" export "$tmp/moe/checkpoint.sxt" "$tmp/x/m.safetensors" 2>&1 | grep -q "has a mixture-of-experts FFN (moe)" || fail "MoE refusal"
"$S" export --format gguf "$tmp/gqa/checkpoint.sxt" "$tmp/x/m.gguf" 2>&1 | grep -q "the one format is safetensors" || fail "format refusal"
cp "$tmp/hf-gqa/model.safetensors" "$tmp/bad.safetensors"
printf '\x55' | dd of="$tmp/bad.safetensors" bs=1 seek=$(( $(stat -c %s "$tmp/bad.safetensors") - 3 )) conv=notrunc 2>/dev/null
"$S" import-weights "$tmp/bad.safetensors" "$tmp/bad.sxt" 2>&1 | grep -q "checksum mismatch" || fail "damaged file accepted"
head -c 100 "$tmp/hf-gqa/model.safetensors" > "$tmp/short.safetensors"
"$S" import-weights "$tmp/short.safetensors" "$tmp/bad.sxt" 2>&1 | grep -q "not a safetensors file" || fail "truncated file accepted"
sed 's/"num_key_value_heads": *[0-9]*/"num_key_value_heads": 1/' "$tmp/foreign/config.json" > "$tmp/misfit.json"   # MQA: k_proj [16, 32]
"$S" import-weights "$tmp/foreign/model.safetensors" "$tmp/bad.sxt" --config "$tmp/misfit.json" 2>&1 |
    grep -q "model.layers.0.self_attn.k_proj.weight has shape" || fail "misfit config accepted"
[ ! -e "$tmp/bad.sxt" ] || fail "a refused import left a checkpoint"

echo "export.sh: $fails failed"
[ $fails -eq 0 ]
