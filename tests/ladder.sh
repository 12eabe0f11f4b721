#!/usr/bin/env bash
# The product path end to end on a seconds-long synthetic ladder: ladder run (parallel, with cooldown
# branches), status, rerun skips finished runs, fit, forecast (hash-frozen), a hero trained with --forecast
# (per-eval comparison in metrics.jsonl and a final report; forecast.json is read once, so an edit while
# the hero trains changes nothing), forecast --check, a tampered forecast refused,
# and compare of two ladders. Asserts structure and sanity, not accuracy (accuracy is the demo's job).
set -u
S=$(realpath "${SEXTANT:-./sextant}")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
A=tests/data/ladder/smoke-a.ladder B=tests/data/ladder/smoke-b.ladder

"$S" ladder run $A --out "$tmp/a" --jobs 2 2> "$tmp/run.log" || { fail "ladder run"; cat "$tmp/run.log"; }
[ "$(ls -d "$tmp"/a/w*-s* | wc -l)" -eq 16 ] || fail "expected 8 main runs + 8 branches"
[ "$(ls "$tmp"/a/w*/DONE | wc -l)" -eq 16 ] || fail "not every run finished"
"$S" ladder run $A --out "$tmp/a" 2>&1 | grep -q "16 already done" || fail "a rerun should skip finished runs"
# A spec edited after its runs finished (another LR) does not take them as its own: ladder run and fit refuse.
sed 's/^lr .*/lr 1e-3/' $A > "$tmp/edited.ladder"
want="$tmp/a/w32-s1 holds a run with other settings than the spec's: --lr 0.0005 (was 0.01). Remove it to train it again, or give the ladder another directory"
out=$("$S" ladder run "$tmp/edited.ladder" --out "$tmp/a" 2>&1) && fail "ladder run of an edited spec passed"
grep -qF -- "$want" <<<"$out" || fail "ladder run of an edited spec said: $out"
out=$("$S" fit "$tmp/edited.ladder" --runs "$tmp/a" --out "$tmp/edited-fit.json" 2>&1) && fail "fit of an edited spec passed"
grep -qF -- "$want" <<<"$out" || fail "fit of an edited spec said: $out"
"$S" ladder status "$tmp/edited.ladder" --out "$tmp/a" > "$tmp/edited-status.txt"
head -n 1 "$tmp/edited-status.txt" | grep -q "^ladder smoke-a: 0 of 16 runs done" &&
    [ "$(grep -c ' another run$' "$tmp/edited-status.txt")" -eq 16 ] || fail "status of an edited spec: $(cat "$tmp/edited-status.txt")"
"$S" ladder status $A --out "$tmp/a" | grep -c " done$" | grep -qx 16 || fail "status should list 16 done runs"
# A setting the optimizer does not read is no difference: runs that recorded a width-scaled muon_lr under
# AdamW (as ladders did before they left it at its default) are still the spec's; an edited lr still is one.
cp "$tmp/a/w32-s1/config.json" "$tmp/w32-config.json"
python3 - "$tmp/a/w32-s1/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); assert c["flags"]["optimizer"] == "adamw"; c["flags"]["muon-lr"] = 0.08
json.dump(c, open(sys.argv[1], "w"))
PY
"$S" ladder status $A --out "$tmp/a" | grep -q "^w32-s1 .* done$" || fail "an unread muon_lr made the run another: $("$S" ladder status $A --out "$tmp/a")"
python3 - "$tmp/a/w32-s1/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["flags"]["optimizer"] = "muon"
json.dump(c, open(sys.argv[1], "w"))
PY
"$S" ladder status $A --out "$tmp/a" | grep -q "^w32-s1 .* another run$" || fail "a run of another optimizer taken as the spec's"
cp "$tmp/w32-config.json" "$tmp/a/w32-s1/config.json"
# Each status table is headed by its ladder's name; a run not started shows "-", not nan, for its loss.
"$S" ladder status $A --out "$tmp/a" | head -n 1 | grep -q "^ladder smoke-a: 16 of 16 runs done (spec " || fail "status heading"
"$S" ladder status $A --out "$tmp/none" | head -n 1 | grep -q "runs in $tmp/none: no such directory yet)$" || fail "status of a directory not there"
"$S" ladder status $A --out "$tmp/none" > "$tmp/status0.txt"
grep -q nan "$tmp/status0.txt" && fail "status prints nan for runs not started"
[ "$(grep -c ' 0/[0-9]* .* - *not started$' "$tmp/status0.txt")" -eq 16 ] || { fail "status of runs not started"; cat "$tmp/status0.txt"; }
# A branch starts from its parent's checkpoint: identical metrics up to the branch point.
diff <(head -n 10 "$tmp/a/w16-s1/metrics.jsonl") <(head -n 10 "$tmp/a/w16-s1-b0/metrics.jsonl") >/dev/null || fail "branch does not share its parent's history"

"$S" fit $A --runs "$tmp/a" --out "$tmp/fit.json" > "$tmp/fit.log" 2> "$tmp/fit.err" || { fail "fit"; cat "$tmp/fit.log"; }
grep -Eq "^sextant fit: done in [0-9.]+ s$" "$tmp/fit.err" || fail "fit: no summary line: $(cat "$tmp/fit.err")"
grep -q '"per_fraction"' "$tmp/fit.json" && grep -q '"schedule_law"' "$tmp/fit.json" || fail "fit.json incomplete"

"$S" forecast --fit "$tmp/fit.json" --model d1-hd8-w48 --flops-ratio 3 --schedule cosine --out "$tmp/fc.json" \
    --plot "$tmp/fc.svg" > "$tmp/fc.log" || { fail "forecast"; cat "$tmp/fc.log"; }
grep -q '"sha256"' "$tmp/fc.json" && grep -q '<svg' "$tmp/fc.svg" || fail "forecast outputs incomplete"
grep -q "peak LR 0.00667, schedule cosine" "$tmp/fc.log" || fail "the hero's LR in short form"
grep -q "Forecast: hero d1-hd8-w48 on cosine, from ladder smoke-a (wsd:decay=0.2,shape=sqrt)" "$tmp/fc.svg" || fail "forecast plot title"
# the two forecasters the forecast averages, drawn beside it
grep -q ">its per-fraction laws<" "$tmp/fc.svg" && grep -q ">its joint law<" "$tmp/fc.svg" || fail "forecast plot: the two forecasters"
# A ladder trained on a shard smaller than the hero's tokens: the forecast warns (from the shard's header).
# (fit.json is hashed, so the fit is made from a spec naming the shard, which has the same vocabulary.)
# (The runs' records name the shard too, or fit would refuse them as another spec's.)
sed 's|^train .*|train tests/fuzz/corpus/shard/v64.bin|' $A > "$tmp/a-shard.ladder"
cp -r "$tmp/a" "$tmp/a-shard"
python3 - "$tmp"/a-shard/*/config.json <<'PY'
import json, sys
for path in sys.argv[1:]:
    c = json.load(open(path))
    c["flags"]["train"] = "tests/fuzz/corpus/shard/v64.bin"
    json.dump(c, open(path, "w"))
PY
"$S" fit "$tmp/a-shard.ladder" --runs "$tmp/a-shard" --out "$tmp/fit-shard.json" > /dev/null 2>&1 || fail "fit of the shard spec"
"$S" forecast --fit "$tmp/fit-shard.json" --model d1-hd8-w48 --flops-ratio 3 --schedule cosine --out "$tmp/fc-shard.json" \
    2>&1 | grep -q "passes over tests/fuzz/corpus/shard/v64.bin (8 tokens)" || fail "no repeated-data warning from forecast"
steps=$(grep -m1 '"steps"' "$tmp/fc.json" | tr -dc 0-9)
"$S" train --model d1-hd8-w48 --train synthetic:64 --batch 4 --seq 16 --schedule cosine --warmup 0.05 --lr 7e-3 \
    --eval-batches 2 --forecast "$tmp/fc.json" --out "$tmp/hero" --quiet > "$tmp/hero.log" 2>&1 || { fail "hero"; cat "$tmp/hero.log"; }
[ "$(wc -l < "$tmp/hero/metrics.jsonl")" -eq "$steps" ] || fail "hero did not take the forecast's $steps steps"
[ "$(grep -c '"forecast_in_band"' "$tmp/hero/metrics.jsonl")" -eq 6 ] || fail "every forecast point should be compared while training"
grep -q "inside band" "$tmp/hero.log" && [ -f "$tmp/hero/forecast_report.json" ] || fail "no final forecast report"
# The frozen forecast is read once (issue 21, defect 3): the same hero trained again while its forecast.json
# is edited after the run started (loss values changed, sha256 kept) reports exactly what the first did.
cp "$tmp/fc.json" "$tmp/fc-live.json"
"$S" train --model d1-hd8-w48 --train synthetic:64 --batch 4 --seq 16 --schedule cosine --warmup 0.05 --lr 7e-3 \
    --eval-batches 2 --forecast "$tmp/fc-live.json" --out "$tmp/hero2" --quiet > "$tmp/hero2.log" 2>&1 &
pid=$!
while [ ! -s "$tmp/hero2/metrics.jsonl" ] && kill -0 $pid 2>/dev/null; do sleep 0.01; done
kill -STOP $pid 2>/dev/null   # hold the run while the file changes under it
[ -e "$tmp/hero2/DONE" ] && fail "the hero finished before its forecast could be edited (test inconclusive)"
sed -i 's/"loss": \([0-9]\)/"loss": 9\1/' "$tmp/fc-live.json"
kill -CONT $pid 2>/dev/null
wait $pid || { fail "hero with a forecast edited while it trains"; cat "$tmp/hero2.log"; }
report() { sed -n '/^forecast check/,/^points /p' "$1" | sed 's/fc-live/fc/'; }
[ -n "$(report "$tmp/hero.log")" ] && diff <(report "$tmp/hero2.log") <(report "$tmp/hero.log") > /dev/null ||
    fail "an edit of forecast.json during training changed the final report"
"$S" forecast --check "$tmp/hero" --forecast "$tmp/fc.json" > "$tmp/check.txt" && grep -q "mean |error| after 10%" "$tmp/check.txt" || fail "forecast --check"
# A check against another forecast keeps the run's own: it goes to forecast_report-STEM.json, said on stdout.
cp "$tmp/hero/forecast_report.json" "$tmp/own-report.json"
"$S" forecast --check "$tmp/hero" --forecast "$tmp/fc-shard.json" 2>&1 | grep -qx "wrote $tmp/hero/forecast_report-fc-shard.json" ||
    fail "a check against another forecast did not say where it went"
cmp -s "$tmp/own-report.json" "$tmp/hero/forecast_report.json" || fail "a check against another forecast replaced the run's own"
grep -q "\"forecast_sha256\": \"$(jq -r .sha256 "$tmp/fc-shard.json")\"" "$tmp/hero/forecast_report-fc-shard.json" ||
    fail "the other forecast's check does not name it"
# The band means the same in the text and in the JSON: its mean half-width, ±X% = 100 x mean_band_halfwidth_rel.
half=$(sed -n 's/.*"mean_band_halfwidth_rel": *\([0-9.e+-]*\).*/\1/p' "$tmp/hero/forecast_report.json")
grep -q "mean band half-width: ±$(awk -v h="$half" 'BEGIN { printf "%.2f", 100 * h }')%" "$tmp/check.txt" ||
    fail "band half-width differs between the text ($(grep -o 'half-width: [^ ]*' "$tmp/check.txt")) and the JSON ($half)"
sed 's/"loss": \([0-9]\)/"loss": 9\1/' "$tmp/fc.json" > "$tmp/tampered.json"
# fit.json is hashed like the forecast: an edited fit is refused.
sed 's/"lr": /"lr": -/' "$tmp/fit.json" > "$tmp/fit-tampered.json"
"$S" forecast --fit "$tmp/fit-tampered.json" --model d1-hd8-w48 --flops-ratio 3 --out "$tmp/fc-t.json" 2>&1 |
    grep -q "fit-tampered.json: sha256 does not match" || fail "a tampered fit.json must be refused"
"$S" forecast --check "$tmp/hero" --forecast "$tmp/tampered.json" 2>&1 | grep -q "sha256 does not match" || fail "a tampered forecast must be refused"
# A run that is not the forecast's hero: the message names the model and steps of both.
out=$("$S" forecast --check "$tmp/a/w8-s1" --forecast "$tmp/fc.json" 2>&1) && fail "forecast --check of another run passed"
echo "$out" | grep -Eq "$tmp/a/w8-s1 is not the forecast's hero: the run is d1-hd8-w8 for [0-9]+ steps \([0-9]+ evaluations, steps [0-9]+\.\.[0-9]+\); the forecast is for d1-hd8-w48 for $steps steps \([0-9]+ points, steps [0-9]+\.\.$steps\)" ||
    fail "forecast --check of another run: $out"
# A ladder whose final losses follow a pure power law (no irreducible loss): fit flags Linf = 0.
cp -r "$tmp/a" "$tmp/pure"
for m in "$tmp"/pure/w*/metrics.jsonl; do
    python3 - "$m" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in rows:
    if "val_loss" in r: r["val_loss"] = 40.0 * r["flops"] ** -0.1
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
done
"$S" fit $A --runs "$tmp/pure" --out "$tmp/pure-fit.json" > "$tmp/pure.log" 2>&1
grep -q "warning: the irreducible loss Linf = 0.0000 sits at its lower bound 0" "$tmp/pure.log" ||
    fail "Linf = 0 not flagged: $(cat "$tmp/pure.log")"
grep -q "irreducible loss" "$tmp/fit.err" && fail "Linf flagged on the real ladder"

cp $B "$tmp/b.ladder"
"$S" ladder run "$tmp/b.ladder" --out "$tmp/b" --jobs 2 2>/dev/null || fail "ladder b"
mkdir -p "$tmp/cwd/runs"; ln -s "$tmp/a" "$tmp/cwd/runs/smoke-a"; ln -s "$tmp/b" "$tmp/cwd/runs/smoke-b"
(cd "$tmp/cwd" && "$S" compare "$OLDPWD/$A" "$OLDPWD/$B" --plot cmp.svg --out cmp.json) > "$tmp/cmp.log" 2>&1 || { fail "compare"; cat "$tmp/cmp.log"; }
cat "$tmp/cmp.log"
grep -q "multiplier" "$tmp/cmp.log" && grep -q "baseline" "$tmp/cmp.log" && grep -q "ladders smoke-a, smoke-b" "$tmp/cwd/cmp.svg" || fail "compare report incomplete"
grep -q "paired 95%" "$tmp/cmp.log" && grep -q "Holm-adjusted over 1 variant" "$tmp/cmp.log" && grep -q '"paired_lo"' "$tmp/cwd/cmp.json" ||
    fail "compare should report the paired interval and the Holm correction"
"$S" compare $A $B --until-decided 2>&1 | grep -q "needs a budget" || fail "--until-decided without a budget should be refused"
# Paired seeds with real training: two ladders that differ only in name train seed k on the same data with
# the same initial weights, so the multiplier is exactly 1 and the paired interval has zero width.
printf 'name id-a\ntrain synthetic:64\nmodel d1-hd8-w{width}\nwidths 8 16 24\nseeds 2\ntokens_per_param 5\nseq 16\nbatch 4\nlr 2e-2\nlr_ref_width 16\nwarmup 0.05\neval_batches 2\neval_at 0.5,1\n' > "$tmp/id-a.ladder"
sed 's/id-a/id-b/' "$tmp/id-a.ladder" > "$tmp/id-b.ladder"
(cd "$tmp/cwd" && "$S" compare ../id-a.ladder ../id-b.ladder --run --jobs 2 2>/dev/null) > "$tmp/id.log" || { fail "compare identical"; cat "$tmp/id.log"; }
grep -E "^id-b .* 1\.000x +\[ 1\.000,  1\.000\] .*no significant difference" "$tmp/id.log" >/dev/null || { fail "identical variants: multiplier 1, zero-width paired interval"; cat "$tmp/id.log"; }
# --until-decided with a budget smaller than one more seed: stops at once, on the budget, and
# cannot estimate the seeds needed (the estimate is exactly 1).
(cd "$tmp/cwd" && "$S" compare ../id-a.ladder ../id-b.ladder --until-decided --budget-flops 1) > "$tmp/until.log" 2>&1 || { fail "until-decided"; cat "$tmp/until.log"; }
grep -q "stopped (budget spent) after 0 rounds, 2 seeds per rung" "$tmp/until.log" &&
    grep -q "id-b: undecided; no estimate" "$tmp/until.log" || { fail "until-decided budget stop"; cat "$tmp/until.log"; }
# its one look is the last: the group-sequential rule spends all of the 5% there, and says so
grep -q "^verdicts: paired seed jackknife t test at group-sequential levels (Pocock-type alpha spending over the 1 look " "$tmp/until.log" ||
    { fail "until-decided should state its verdict rule"; cat "$tmp/until.log"; }
(cd "$tmp/cwd" && "$S" compare ../id-a.ladder ../id-b.ladder --until-decided --budget-flops 1 --spending pocok) 2>&1 |
    grep -q "spending must be pocock or obf, not 'pocok'" || fail "--spending with an unknown name should be refused"
# --precision: identical variants' zero-width interval is as precise as any, so it stops before a round;
# a fraction outside [0, 1), both stops at once, or a stop without --until-decided is refused.
(cd "$tmp/cwd" && "$S" compare ../id-a.ladder ../id-b.ladder --until-decided --budget-flops 1e15 --precision 0.1) > "$tmp/prec.log" 2>&1 &&
    grep -q "stopped (every paired interval within +-10% of its estimate) after 0 rounds" "$tmp/prec.log" ||
    { fail "--precision on identical variants"; cat "$tmp/prec.log"; }
for bad in "--precision 1.5:--precision must be a fraction in \[0, 1), not 1.5" "--precision 0.1 --width 0.1:give one" \
           "--precision 0.1 --no-until:--precision is a setting of --until-decided" \
           "--target-flops -5 --no-until:--target-flops and the budgets >= 0" \
           "--budget 1 --no-until:--budget is a setting of --until-decided" "--jobs 2 --no-until:--jobs is for training" \
           "--spending pocock --no-until:--spending is a setting of --until-decided" "--jobs 1 --no-until:--jobs is for training" \
           "--seeds-only --no-until:--seeds-only is a setting of --until-decided"; do
    args=${bad%%:*}; want=${bad#*:}
    case $args in *--no-until) args=${args% --no-until}; until="" ;; *) until="--until-decided --budget-flops 1" ;; esac
    (cd "$tmp/cwd" && "$S" compare ../id-a.ladder ../id-b.ladder $until $args) 2>&1 | grep -q -- "$want" || fail "compare $args should be refused: /$want/"
done

# min_steps: a rung with too few steps at the spec's batch trains with a divisor of it (and evaluates the
# same windows: eval_batches grows by the same factor); the other rungs keep the spec's batch.
printf 'name m\ntrain synthetic:64\nmodel d1-hd8-w{width}\nwidths 8 32\nseeds 1\nseq 16\nbatch 8\neval_batches 2\nmin_steps 200\n' > "$tmp/min.ladder"
"$S" ladder plan "$tmp/min.ladder" > "$tmp/min.plan" || fail "min_steps plan"
small=$(awk '$2 == "w8-s1" {print $5, $7}' "$tmp/min.plan") big=$(awk '$2 == "w32-s1" {print $7}' "$tmp/min.plan")
small_steps=${small% *} small_batch=${small#* }
{ [ "$small_batch" -lt 8 ] && [ $((8 % small_batch)) -eq 0 ] && [ "$small_steps" -ge 200 ] && [ "$big" = 8 ]; } ||
    fail "min_steps: w8 should take a divisor of 8 with >= 200 steps, w32 batch 8 (got '$small' and '$big')"

# The min_steps search is bounded: the largest batch the spec allows, with a min_steps no batch reaches, plans
# at once (it once tried every batch downward, one at a time).
printf 'name m\ntrain synthetic:64\nmodel d1-hd8-w{width}\nwidths 8 32\nseeds 1\nbatch 16777216\nmin_steps 1000000000\n' > "$tmp/huge.ladder"
timeout 5 "$S" ladder plan "$tmp/huge.ladder" > "$tmp/huge.plan" && grep -q "batch 1 " "$tmp/huge.plan" ||
    fail "min_steps with batch 2^24 should plan within 5 s at batch 1"

# Killing only the ladder (kill -9) stops its trainers too (each writes a checkpoint, as on SIGTERM); while
# the ladder or its trainers run, a second `ladder run` on the directory is refused.
printf 'name k\ntrain synthetic:64\nmodel d1-hd8-w{width}\nwidths 32 48\nseeds 1\ntokens_per_param 100\nseq 16\nbatch 4\neval_batches 1\n' > "$tmp/k.ladder"
"$S" ladder run "$tmp/k.ladder" --out "$tmp/k" --jobs 2 2>/dev/null &
lpid=$!
for _ in $(seq 3000); do [ -s "$tmp/k/w32-s1/metrics.jsonl" ] && [ -s "$tmp/k/w48-s1/metrics.jsonl" ] && break; sleep 0.02; done
"$S" ladder run "$tmp/k.ladder" --out "$tmp/k" 2>&1 | grep -q "is in use by another sextant process" || fail "a second ladder run on a busy directory"
kill -9 $lpid; wait $lpid 2>/dev/null
for _ in $(seq 3000); do pgrep -f -- "--out $tmp/k/" >/dev/null || break; sleep 0.02; done
pgrep -f -- "--out $tmp/k/" >/dev/null && fail "trainers outlived their killed ladder"
[ -f "$tmp/k/w32-s1/checkpoint.sxt" ] || fail "a trainer stopped with its ladder should leave a checkpoint"
"$S" ladder status "$tmp/k.ladder" --out "$tmp/k" | grep -c " partial$" | grep -qx 2 || fail "both runs should be partial"

# Bad specs: a clear message naming the file and line.
printf 'name x\nwidths 8 -3\n' > "$tmp/bad.ladder"
"$S" ladder run "$tmp/bad.ladder" 2>&1 | grep -q "bad.ladder:2: widths" || fail "bad spec message"
printf 'name x\nwidthz 8\n' > "$tmp/bad2.ladder"
"$S" ladder plan "$tmp/bad2.ladder" 2>&1 | grep -q "unknown key" || fail "unknown key message"

echo "ladder.sh: $fails failed"
[ $fails -eq 0 ]
