#!/usr/bin/env bash
# sextant's own ladder in the external curve format: `import --from-ladder` writes a trained smoke ladder as a
# curve ladder whose every number is the run directories' (parameter counts, batch, FLOPs per token, each
# evaluation's loss, the LR of every step as LR-only rows); its tables imported again give the same bytes
# and a byte-identical fit.json; backtest reads it, and compare reads two such ladders (or one and a spec)
# with the specs' results to the last digit. A run with nothing but LR-only
# rows is refused.
set -u
S=$(realpath "${SEXTANT:-./sextant}")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
A=tests/data/ladder/smoke-a.ladder

"$S" ladder run $A --out "$tmp/a" --jobs 2 2> "$tmp/run.log" || { fail "ladder run"; cat "$tmp/run.log"; }
"$S" import --from-ladder $A --from-runs "$tmp/a" --out "$tmp/L" > "$tmp/imp.log" 2>&1 || { fail "import --from-ladder"; cat "$tmp/imp.log"; }
grep -q "imported 16 runs in 4 groups, 128 evaluations of 1 loss column(s)" "$tmp/imp.log" || fail "summary: $(cat "$tmp/imp.log")"
python3 - "$tmp" <<'PY' || fails=$((fails+1))
import csv, json, os, sys
t = sys.argv[1]
runs = {r["run_id"]: r for r in csv.DictReader(open(f"{t}/L/runs.csv"))}
rows = list(csv.DictReader(open(f"{t}/L/curves.csv")))
bad = []
if sorted(runs) != sorted(d for d in os.listdir(f"{t}/a") if d.startswith("w")): bad.append(f"runs {sorted(runs)}")
for rid, r in runs.items():
    cfg = json.load(open(f"{t}/a/{rid}/config.json"))
    for key, want in (("n_params", cfg["n_params"]), ("n_params_nonembed", cfg["n_params_nonembed"]),
                      ("tokens_per_step", cfg["batch_tokens"]), ("total_steps", cfg["total_steps"]),
                      ("flops_per_token", cfg["flops_per_token"])):
        if float(r[key]) != float(want): bad.append(f"{rid} {key} {r[key]} != {want}")
    if r["group"] != rid.split("-")[0] or r["seed"] != rid.split("-")[1][1:]: bad.append(f"{rid} group/seed {r['group']} {r['seed']}")
    metrics = [json.loads(l) for l in open(f"{t}/a/{rid}/metrics.jsonl") if '"step"' in l]
    mine = [c for c in rows if c["run_id"] == rid]
    if len(mine) != cfg["total_steps"]: bad.append(f"{rid}: {len(mine)} rows for {cfg['total_steps']} steps")
    for m, c in zip(metrics, mine):
        if int(c["step"]) != m["step"] or float(c["lr"]) != m["lr"]: bad.append(f"{rid} step {m['step']}: lr {c['lr']} != {m['lr']}"); break
        if ("val_loss" in m) != (c["val_loss"] != ""): bad.append(f"{rid} step {m['step']}: evaluation missing or extra"); break
        if "val_loss" in m and (float(c["val_loss"]) != m["val_loss"] or float(c["tokens"]) != m["tokens"]):
            bad.append(f"{rid} step {m['step']}: loss {c['val_loss']} != {m['val_loss']}"); break
for b in bad[:10]: print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
# Round trip: the ladder's tables imported like any trainer's give the same directory and the same fit.json.
"$S" import --runs "$tmp/L/runs.csv" --curves "$tmp/L/curves.csv" --loss-col val_loss --out "$tmp/L2" > /dev/null 2>&1 || fail "re-import"
cmp -s "$tmp/L/runs.csv" "$tmp/L2/runs.csv" && cmp -s "$tmp/L/curves.csv" "$tmp/L2/curves.csv" || fail "tables differ after the round trip"
"$S" fit "$tmp/L" > "$tmp/fit1.log" 2>&1 && "$S" fit "$tmp/L2" > "$tmp/fit2.log" 2>&1 || { fail "fit"; cat "$tmp/fit1.log" "$tmp/fit2.log"; }
cmp -s "$tmp/L/fit.json" "$tmp/L2/fit.json" || fail "fit.json differs between the exported and the re-imported ladder"
grep -q '"kind": "curve-ladder"' "$tmp/L/fit.json" || fail "fit.json of the exported ladder"
"$S" backtest "$tmp/L" > "$tmp/bt.log" 2>&1 && grep -q "^targets: w32$" "$tmp/bt.log" && grep -q "^nds  *32 " "$tmp/bt.log" ||
    fail "backtest of the exported ladder: $(cat "$tmp/bt.log")"

# An own ladder's forecast is the mean of two forecasters: the per-fraction laws and the joint law, which `fit`
# fits to the same runs as a curve ladder. fit.json holds that law (parameters equal to the exported ladder's
# fit), and the forecast's joint part equals the curve forecast of the hero described by flags (its parameter
# counts from `inspect`, its steps, warmup and schedule from the forecast).
"$S" fit $A --runs "$tmp/a" --out "$tmp/own-fit.json" > "$tmp/own-fit.log" 2>&1 || { fail "own fit"; cat "$tmp/own-fit.log"; }
grep -q "^joint law: L = .*(N [a-z ].*; 16 runs, 128 points;" "$tmp/own-fit.log" || fail "fit prints no joint law: $(cat "$tmp/own-fit.log")"
"$S" forecast --fit "$tmp/own-fit.json" --model d1-hd8-w48 --flops-ratio 3 --schedule cosine --out "$tmp/own-fc.json" \
    > "$tmp/own-fc.log" 2>&1 || { fail "own forecast"; cat "$tmp/own-fc.log"; }
grep -q "(mean of the per-fraction laws' [0-9.]* and the joint law's [0-9.]*)" "$tmp/own-fc.log" || fail "forecast line: $(cat "$tmp/own-fc.log")"
read -r steps warmup at < <(python3 -c "import json, math, sys; d = json.load(open(sys.argv[1])); h = d['hero']
print(h['steps'], max(1, math.floor(h['warmup'] * h['steps'] + 0.5)), ','.join(str(p['step']) for p in d['points']))" "$tmp/own-fc.json")
inspect=$("$S" inspect d1-hd8-w48 --vocab 64 --seq 16)
n=$(echo "$inspect" | awk '/^params total/ { print $3 }'); ne=$(echo "$inspect" | awk '/^params non-emb/ { print $3 }')
"$S" forecast --fit "$tmp/L/fit.json" --n-params "$n" --n-params-nonembed "$ne" --tokens-per-step 64 --total-steps "$steps" \
    --warmup-steps "$warmup" --schedule cosine --steps "$at" --out "$tmp/curve-fc.json" > "$tmp/curve-fc.log" 2>&1 ||
    { fail "curve forecast of the hero"; cat "$tmp/curve-fc.log"; }
python3 - "$tmp" <<'PY' || fails=$((fails+1))
import json, sys
t = sys.argv[1]
fit, lfit = json.load(open(f"{t}/own-fit.json")), json.load(open(f"{t}/L/fit.json"))
own, curve = json.load(open(f"{t}/own-fc.json")), json.load(open(f"{t}/curve-fc.json"))
bad = [f"joint law {k}: {v} != {lfit['params'][k]}" for k, v in fit["joint_law"]["params"].items() if abs(v / lfit["params"][k] - 1) > 1e-12]
if own["method"]["combine"] != "mean of the per-fraction laws and the joint law": bad.append(f"method {own['method']}")
for p, q in zip(own["points"], curve["points"]):
    if p["step"] != q["step"] or abs(p["loss_joint"] / q["loss"] - 1) > 1e-9: bad.append(f"step {p['step']}: joint {p['loss_joint']} != {q['loss']}")
    if abs(p["loss"] - (p["loss_per_fraction"] + p["loss_joint"]) / 2) > 1e-12: bad.append(f"step {p['step']}: loss is not the mean")
    if not p["lo"] < min(p["loss_per_fraction"], p["loss_joint"]) <= max(p["loss_per_fraction"], p["loss_joint"]) < p["hi"]:
        bad.append(f"step {p['step']}: the band [{p['lo']}, {p['hi']}] leaves out a forecaster")
if len(own["points"]) != 6 or len(curve["points"]) != 6: bad.append("points")
for b in bad[:10]: print("FAIL: own forecast:", b)
sys.exit(1 if bad else 0)
PY

# A hero far off the ladder's allocation (w128 at 3x the top rung's compute: 0.07 tokens per parameter against the
# rungs' 5) is forecast by the joint law alone: the per-fraction laws see only its compute.
"$S" forecast --fit "$tmp/own-fit.json" --model d1-hd8-w128 --flops-ratio 3 --schedule cosine --out "$tmp/off-fc.json" \
    > "$tmp/off-fc.log" 2>&1 || { fail "off-ladder forecast"; cat "$tmp/off-fc.log"; }
grep -q "(the joint law alone: the hero trains 0.0678 tokens per non-embedding parameter, the ladder's rungs 5;" "$tmp/off-fc.log" ||
    fail "off-ladder forecast line: $(cat "$tmp/off-fc.log")"
python3 - "$tmp/off-fc.json" <<'PY' || fails=$((fails+1))
import json, sys
d = json.load(open(sys.argv[1]))
bad = [] if d["method"]["combine"] == "the joint law alone: the hero is off the ladder's allocation" else [f"method {d['method']}"]
if abs(d["method"]["tokens_per_param"]["hero"] / 0.0678 - 1) > 0.01 or d["method"]["tokens_per_param"]["ladder"] != 5: bad.append("tokens_per_param")
bad += [f"step {p['step']}: loss {p['loss']} is not the joint law's {p['loss_joint']}" for p in d["points"] if p["loss"] != p["loss_joint"]]
for b in bad[:10]: print("FAIL: off-ladder forecast:", b)
sys.exit(1 if bad else 0)
PY

# compare reads curve ladders like specs: the two exported smoke ladders give the specs' report number for
# number (same rungs, seeds and jackknife), and mixing a spec with a curve ladder works too.
B=tests/data/ladder/smoke-b.ladder
"$S" ladder run $B --out "$tmp/b" --jobs 2 2> "$tmp/runb.log" || { fail "ladder run b"; cat "$tmp/runb.log"; }
"$S" import --from-ladder $B --from-runs "$tmp/b" --out "$tmp/LB" > /dev/null 2>&1 || fail "import --from-ladder b"
# The tables' flags with --from-ladder, and --from-runs without it, are refused (before: ignored).
out=$("$S" import --from-ladder $B --from-runs "$tmp/b" --loss-col loss --out "$tmp/LX" 2>&1) && fail "--loss-col with --from-ladder accepted"
grep -q -- "--loss-col does not apply to --from-ladder (a sextant ladder, read as it is) (it takes --from-ladder, --from-runs or --out)" <<<"$out" ||
    fail "--loss-col with --from-ladder: $out"
out=$("$S" import --curves "$tmp/c.csv" --from-runs "$tmp/b" --out "$tmp/LX" 2>&1) && fail "--from-runs without --from-ladder accepted"
grep -q -- "--from-runs is the runs directory of --from-ladder SPEC: give --from-ladder" <<<"$out" || fail "--from-runs alone: $out"
[ ! -e "$tmp/LX" ] || fail "a refused import wrote $tmp/LX"
mkdir -p "$tmp/cwd/runs"; ln -s "$tmp/a" "$tmp/cwd/runs/smoke-a"; ln -s "$tmp/b" "$tmp/cwd/runs/smoke-b"
(cd "$tmp/cwd" && "$S" compare "$OLDPWD/$A" "$OLDPWD/$B" --out spec.json > spec.log 2>&1 &&
    "$S" compare "$tmp/L" "$tmp/LB" --out curves.json --plot curves.svg > curves.log 2>&1 &&
    "$S" compare "$OLDPWD/$A" "$tmp/LB" --out mixed.json > mixed.log 2>&1) || { fail "compare"; cat "$tmp"/cwd/*.log; }
python3 - "$tmp/cwd" <<'PY' || fails=$((fails+1))
import json, sys
d = sys.argv[1]
a, b, m = (json.load(open(f"{d}/{n}.json")) for n in ("spec", "curves", "mixed"))
keys = ["loss", "loss_lo", "loss_hi", "multiplier", "multiplier_lo", "multiplier_hi", "paired_lo", "paired_hi", "p_value",
        "rung_flops", "rung_loss", "params", "seeds", "verdict"]
bad = [f"{r['name']} {k}: {r.get(k)} != {q.get(k)}" for rep in (b, m) for r, q in zip(rep["variants"], a["variants"]) for k in keys
       if r.get(k) != q.get(k)]
if a["target_flops"] != b["target_flops"]: bad.append(f"target {b['target_flops']} != {a['target_flops']}")
if [v["name"] for v in b["variants"]] != ["L", "LB"] or b["variants"][0]["kv_bytes_per_token"] is not None: bad.append("names / kv")
# 2 seeds, and smoke-b is worse at w16, better at the other rungs: the jackknife t interval decides nothing
# (the percentile bootstrap called it better, p 9e-19)
if not b["paired"] or b["variants"][1]["verdict"] != "no significant difference": bad.append(f"verdict {b['variants'][1]['verdict']}")
for x in bad[:10]: print("FAIL: compare of curve ladders:", x)
sys.exit(1 if bad else 0)
PY
grep -q "ladders L, LB" "$tmp/cwd/curves.svg" || fail "compare plot of curve ladders"
grep -q "note:" "$tmp"/cwd/*.log && fail "a note where every ladder compares val_loss: $(grep note: "$tmp"/cwd/*.log)"
# Variants compared on differently named losses are said so (before: compared without a word).
sed '1s/val_loss$/loss_wiki/' "$tmp/LB/curves.csv" > "$tmp/wiki.csv"
"$S" import --runs "$tmp/LB/runs.csv" --curves "$tmp/wiki.csv" --loss-col loss_wiki --out "$tmp/LW" > /dev/null 2>&1 || fail "import loss_wiki"
"$S" compare "$tmp/L" "$tmp/LW" 2>&1 >/dev/null | grep -q "compare: note: LW's loss is loss_wiki, the baseline L's is val_loss" ||
    fail "differently named losses compared without a note"
out=$("$S" compare "$tmp/L" "$tmp/LB" --run 2>&1)
echo "$out" | grep -q "a curve ladder directory has nothing to train" || fail "compare --run of curve ladders: $out"

grep -v '^w8-s1,' "$tmp/L/curves.csv" > "$tmp/c.csv"
awk -F, '$1 == "w8-s1" && $5 == ""' "$tmp/L/curves.csv" >> "$tmp/c.csv"
out=$("$S" import --runs "$tmp/L/runs.csv" --curves "$tmp/c.csv" --loss-col val_loss --out "$tmp/bad" 2>&1)
echo "$out" | grep -q "runs.csv: run 'w8-s1' has no evaluations (only LR rows) in .*c.csv" || fail "LR-only run: $out"
[ -e "$tmp/bad" ] && fail "a refused import left its directory"

[ $fails -eq 0 ] && echo "own_ladder_curves: all checks passed"
exit $((fails > 0))
