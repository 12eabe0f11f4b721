#!/usr/bin/env bash
# A ladder whose directory holds an extra seed on one rung (seeds.json, as `compare --until-decided` writes
# it) is read whole by `report`, `import --from-ladder` and `fit --with`, not only the spec's `seeds` count:
# a three-rung, one-seed ladder with a second seed at w8 has 4 runs, and its data-limited twin 4 run pairs.
set -u
S=$(realpath "${SEXTANT:-./sextant}")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
cd "$tmp" || exit 1
cat > f.ladder <<'EOF'
name            rsf
train           synthetic:64
model           d1-hd8-w{width}
widths          8 16 24
seeds           1
tokens_per_param 5
seq             16
batch           4
lr              2e-2
lr_ref_width    16
schedule        cosine
warmup          0.05
eval_batches    2
eval_at         0.25,0.5,0.75,1
EOF
{ sed 's/^name .*/name rsl/' f.ladder; echo "unique_tokens 2000"; } > l.ladder
# seeds.json of ladder $1: w8 holds 2 seeds.
seeds() {
    mkdir -p "runs/$1"
    python3 - "runs/$1/seeds.json" "$1" <<'PY'
import json, sys, zlib
rungs = [{"width": 24, "seeds": 1}, {"width": 16, "seeds": 1}, {"width": 8, "seeds": 2}]
crc = zlib.crc32(json.dumps(rungs, separators=(",", ":")).encode())
json.dump({"format": "sextant-ladder-seeds", "version": 1, "ladder": sys.argv[2], "rungs": rungs, "crc32": crc},
          open(sys.argv[1], "w"))
PY
}
seeds rsf
"$S" ladder run f.ladder 2> run.log || { fail "ladder run"; cat run.log; }
[ -f runs/rsf/w8-s2/DONE ] || fail "ladder run should train w8-s2 from seeds.json"

"$S" report f.ladder > /dev/null || fail "report"
grep -q '<td class="l">w8-s2</td>' runs/rsf/report.html || fail "report: no row for w8-s2"
grep -q "3 rungs &times; 1 seeds (up to 2 on some rungs)" runs/rsf/report.html || fail "report: summary should name the extra seeds"

"$S" import --from-ladder f.ladder --out L > imp.log 2>&1 || { fail "import --from-ladder"; cat imp.log; }
grep -q "^imported 4 runs in 3 groups" imp.log || fail "import should read w8-s2: $(cat imp.log)"

# The data-limited twin: the fresh runs with unique_tokens 2000 and the data-constrained law's repeat penalty
# (B 50, beta 0.5, Rstar 5) on every evaluation (no corpus here to train with unique tokens).
seeds rsl
python3 - <<'PY' || fail "writing the twin"
import json, math, os, shutil
U, B, beta, rstar = 2000.0, 50.0, 0.5, 5.0
def penalty(D):
    if D <= U: return 0.0
    Dp = U + U * rstar * (1 - math.exp(-(D / U - 1) / rstar))
    return B * (Dp ** -beta - D ** -beta)
for run in ("w24-s1", "w16-s1", "w8-s1", "w8-s2"):
    a, b = f"runs/rsf/{run}", f"runs/rsl/{run}"
    shutil.copytree(a, b)
    cfg = json.load(open(f"{a}/config.json"))
    cfg["unique_tokens"] = U
    json.dump(cfg, open(f"{b}/config.json", "w"))
    with open(f"{b}/metrics.jsonl", "w") as out:
        for line in open(f"{a}/metrics.jsonl"):
            m = json.loads(line)
            if "val_loss" in m: m["val_loss"] += penalty(m["tokens"])
            out.write(json.dumps(m) + "\n")
PY
"$S" fit f.ladder --with l.ladder > fit.log 2>&1 || { fail "fit --with"; cat fit.log; }
grep -q "data-constrained law from 4 run pairs" fit.log || fail "fit --with should pair w8-s2: $(grep data fit.log)"

echo "rung_seeds.sh: $fails failed"
[ $fails -eq 0 ]
