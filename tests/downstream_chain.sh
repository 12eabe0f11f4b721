#!/usr/bin/env bash
# The downstream forecast's chain on synthetic run directories (no training): a four-rung ladder whose runs
# log a planted validation loss L(C, f) = 2 + 30 (f C)^-0.15 and two tasks on the same evaluation lines -- "mc",
# whose task loss is 1.5 L and whose accuracy follows a planted sigmoid (floor 0.25, ceiling 0.9, k 3, L0 4.6)
# with the binomial noise of 1000 items, and "flat", at chance (0.25) whatever the loss. `fit` fits both steps
# for each task (the sigmoid chosen for mc by leave-one-rung-out; flat called chance); `forecast` gives the
# hero's accuracy at every fraction, within 2 points of the planted accuracy at the end, with a band; and
# `forecast --check` on a hero that logs the planted values reports the accuracy errors in points beside the
# loss errors: mc inside its band at >= 90% of the fractions, flat's band reaching 100%; with --plot it writes
# one chart per task beside the loss chart, holding the hero's 9 measured accuracies, and the run's HTML report
# shows the same charts.
set -u
S=${SEXTANT:-./sextant}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

printf 'name t\ntrain synthetic:64\nmodel d1-hd8-w{width}\nwidths 16 24 32 48\nseeds 2\ntokens_per_param 5\nseq 16\nbatch 4\nlr 2e-2\nlr_ref_width 16\nschedule wsd:decay=0.2\nwarmup 0.05\neval_batches 1\neval_at 0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1\n' > "$tmp/t.ladder"
"$S" ladder plan "$tmp/t.ladder" > "$tmp/plan.txt" || { echo "FAIL: ladder plan"; exit 1; }

# write.py DIR MODEL STEPS FLOPS SEED FRACS...: a finished run directory with the planted metrics.
cat > "$tmp/write.py" <<'PY'
import json, math, os, random, sys
d, model, steps, flops, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
fracs = [float(x) for x in sys.argv[6:]]
rng = random.Random(hash((steps, seed)) & 0xffffffff)
os.makedirs(d, exist_ok=True)
json.dump({"model": model, "n_params": 1000, "n_params_nonembed": 800, "flops_per_token": flops / (steps * 64),
           "total_steps": steps, "total_tokens": steps * 64, "batch_tokens": 64, "seed": seed,
           "model_config": {"vocab": 64}}, open(d + "/config.json", "w"))
def sig(tl): return 0.25 + 0.65 / (1 + math.exp(3 * (tl - 4.6)))
def binom(p, n): return sum(rng.random() < p for _ in range(n)) / n
evals = {round(f * steps): f for f in fracs}
with open(d + "/metrics.jsonl", "w") as m:
    for s in range(1, steps + 1):
        lr = 0.01 * min(1, s / (0.05 * steps)) * min(1, (steps - s) / (0.2 * steps) + 1e-3)
        rec = {"step": s, "lr": lr, "train_loss": 3.0}
        if s in evals:
            f = evals[s]
            L = (2 + 30 * (f * flops) ** -0.15) * (1 + 0.002 * rng.gauss(0, 1))
            tl = 1.5 * L
            rec.update({"val_loss": L, "frac": f, "tokens": s * 64, "flops": f * flops,
                        "task_mc_acc": binom(sig(tl), 1000), "task_mc_loss": tl, "task_mc_n": 1000,
                        "task_flat_acc": binom(0.25, 1000), "task_flat_loss": tl + 1, "task_flat_n": 1000})
        m.write(json.dumps(rec) + "\n")
open(d + "/DONE", "w").close()
PY
fracs="0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1"
while read -r _ dir model _ steps _ _ _ _ flops _; do
    python3 "$tmp/write.py" "$tmp/L/$dir" "$model" "$steps" "$flops" "${dir##*-s}" $fracs || fail "write $dir"
done < "$tmp/plan.txt"

"$S" fit "$tmp/t.ladder" --runs "$tmp/L" --out "$tmp/fit.json" > "$tmp/fit.log" 2>&1 || { fail "fit"; cat "$tmp/fit.log"; }
grep -q "task mc: accuracy law sigmoid" "$tmp/fit.log" || fail "fit does not report mc's sigmoid: $(cat "$tmp/fit.log")"
grep -q "task flat: no accuracy law (chance" "$tmp/fit.log" || fail "fit does not call flat at chance: $(cat "$tmp/fit.log")"
"$S" forecast --fit "$tmp/fit.json" --model d1-hd8-w64 --flops-ratio 4 --out "$tmp/fc.json" > "$tmp/fc.log" 2>&1 ||
    { fail "forecast"; cat "$tmp/fc.log"; }
grep -q "task mc: accuracy" "$tmp/fc.log" || fail "forecast prints no task line: $(cat "$tmp/fc.log")"
read -r steps flops < <(python3 -c "import json; h = json.load(open('$tmp/fc.json'))['hero']; print(h['steps'], h['flops'])")
python3 "$tmp/write.py" "$tmp/hero" d1-hd8-w64 "$steps" "$flops" 1 $fracs || fail "write hero"
python3 - "$tmp/fc.json" "$flops" <<'PY' || fail "forecast.json's task points"
import json, math, sys
fc, C = json.load(open(sys.argv[1])), float(sys.argv[2])
mc, flat = fc["tasks"]["mc"], fc["tasks"]["flat"]
assert mc["status"] == "informative" and mc["form"] == "sigmoid" and flat["status"] == "chance", (mc["status"], flat["status"])
assert len(mc["points"]) == 9
end = mc["points"][-1]
truth = 0.25 + 0.65 / (1 + math.exp(3 * (1.5 * (2 + 30 * C ** -0.15) - 4.6)))
print(f"  mc at the end: forecast {100*end['acc']:.2f}% [{100*end['lo']:.2f}, {100*end['hi']:.2f}], planted {100*truth:.2f}%")
assert abs(end["acc"] - truth) < 0.02 and end["lo"] < truth < end["hi"], (end, truth)
assert end["hi"] - end["lo"] < 0.12, end
fe = flat["points"][-1]
assert fe["hi"] == 1 and fe["lo"] < 0.25 and abs(fe["acc"] - 0.25) < 0.01, fe
PY
"$S" forecast --check "$tmp/hero" --forecast "$tmp/fc.json" --plot "$tmp/check.svg" > "$tmp/check.log" 2>&1 ||
    { fail "check"; cat "$tmp/check.log"; }
for t in mc flat; do
    f="$tmp/check-task-$t.svg"
    [ -s "$f" ] || { fail "no task chart $f"; continue; }
    [ "$(grep -c 'r="2.5" fill="#000"' "$f")" -eq 9 ] || fail "$f: not 9 measured points"
    grep -q "Task $t: hero d1-hd8-w64 measured vs its chained forecast" "$f" || fail "$f: title"
done
grep -q "accuracy law sigmoid, 95% band" "$tmp/check-task-mc.svg" || fail "mc chart legend"
grep -q "no law: chance, 95% band" "$tmp/check-task-flat.svg" || fail "flat chart legend"
"$S" report "$tmp/hero" --forecast "$tmp/fc.json" --out "$tmp/hero.html" > /dev/null 2>&1 || fail "report"
[ "$(grep -c 'Task [a-z]*: hero d1-hd8-w64 measured vs' "$tmp/hero.html")" -eq 2 ] || fail "the HTML report lacks the task charts"
grep -q "^task mc (accuracy law sigmoid)" "$tmp/check.log" || fail "check prints no task table: $(cat "$tmp/check.log")"
grep -q "final accuracy error" "$tmp/check.log" || fail "check prints no accuracy summary"
python3 - "$tmp/hero/forecast_report.json" <<'PY' || fail "forecast_report.json's tasks"
import json, sys
r = json.load(open(sys.argv[1]))["tasks"]
mc, flat = r["mc"], r["flat"]
print(f"  check: mc final error {mc['final_err_points']:+.2f} points, inside band {100*mc['inside_band_frac']:.0f}%")
assert mc["points"] == 9 and abs(mc["final_err_points"]) < 3 and mc["inside_band_frac"] >= 0.9, mc
assert flat["inside_band_frac"] == 1 and flat["mean_band_halfwidth_points"] > 30, flat
PY

# An accuracy outside [0, 1] is refused with its file, line and key.
sed -i '0,/"task_mc_acc": [0-9.]*/s//"task_mc_acc": 1.5/' "$tmp/L/w16-s1/metrics.jsonl"
out=$("$S" fit "$tmp/t.ladder" --runs "$tmp/L" --out "$tmp/bad.json" 2>&1) && fail "an accuracy of 1.5 was fitted"
grep -q 'w16-s1/metrics.jsonl:[0-9]*: "task_mc_acc" at step [0-9]* is not an accuracy in \[0, 1\]' <<< "$out" || fail "refusal: $out"

[ $fails -eq 0 ] && echo "downstream_chain.sh: all passed" || { echo "downstream_chain.sh: $fails failed"; exit 1; }
