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

# A rung --until-decided added (seeds.json version 2, "added"): the plan holds it in front, `ladder run` trains it
# and `fit` fits it; "added" in a version 1 file, or on a ladder of budgets, is refused.
# added_seeds DIR VERSION LADDER [WIDTH]: seeds.json with w32 (or WIDTH; 2 seeds) added in front of the spec's rungs.
added_seeds() {
    mkdir -p "$1"
    python3 - "$1/seeds.json" "$2" "$3" "${4:-32}" <<'PY'
import json, sys, zlib
rungs = [{"width": int(sys.argv[4]), "seeds": 2, "added": True}, {"width": 24, "seeds": 1}, {"width": 16, "seeds": 1}, {"width": 8, "seeds": 1}]
crc = zlib.crc32(json.dumps(rungs, separators=(",", ":")).encode())
json.dump({"format": "sextant-ladder-seeds", "version": int(sys.argv[2]), "ladder": sys.argv[3], "rungs": rungs, "crc32": crc},
          open(sys.argv[1], "w"))
PY
}
sed 's/^name .*/name rsa/' f.ladder > a.ladder
added_seeds runs/rsa 2 rsa
"$S" ladder plan a.ladder > plan.txt 2>&1 || { fail "plan with an added rung"; cat plan.txt; }
[ "$(awk '$2 ~ /^w/ {print $2}' plan.txt | head -3 | tr '\n' ' ')" = "w32-s1 w32-s2 w24-s1 " ] ||
    { fail "the added rung should lead the plan"; cat plan.txt; }
"$S" ladder run a.ladder 2> runa.log || { fail "ladder run with an added rung"; cat runa.log; }
[ -f runs/rsa/w32-s2/DONE ] || fail "ladder run should train the added rung's w32-s2"
"$S" fit a.ladder > fita.log 2>&1 || { fail "fit with an added rung"; cat fita.log; }
grep -q "joint law: .*(N with embeddings less [0-9]*; 5 runs," fita.log || fail "fit should fit the added rung's 2 runs: $(grep joint fita.log)"
added_seeds runs/rsa 1 rsa
"$S" ladder plan a.ladder 2>&1 | grep -q "an added rung needs version 2" || fail "'added' in a version 1 seeds file should be refused"
added_seeds runs/rsa 2 rsa 12
"$S" ladder plan a.ladder 2>&1 | grep -q "an added rung (w12) must be wider than the ladder's rungs" ||
    fail "an added rung below the ladder's largest should be refused"
printf 'name rsb\ntrain synthetic:64\nmodel d1-hd8-w{width}\nbudgets 1e8 2e8 4e8\nseeds 1\n' > b.ladder
added_seeds runs/rsb 2 rsb
"$S" ladder plan b.ladder 2>&1 | grep -q "its rungs are budgets, not widths: no rung can be added" ||
    fail "an added rung on a ladder of budgets should be refused"

echo "rung_seeds.sh: $fails failed"
[ $fails -eq 0 ]
