#!/usr/bin/env bash
# The mixture end to end on fixture text (no real packages): tokenize mixture writes a shard per source and
# split (the sources --sources names, or else those TEXT_DIR/STATS lists) and a spec whose default weights
# are the sources' token shares (--weights overrides them); train on the spec logs val_loss_NAME for every
# source and val_loss = the weighted mean of them; resuming a mixture run from a kept checkpoint continues
# the exact stream; a bad spec is refused with the file and line named; a ladder on the mixture is fitted
# and forecast for one source (fit --val-set), which fit.json and forecast.json record.
set -euo pipefail
S=${SEXTANT:-./sextant}
work=${SEXTANT_BUILD:-build}/tests/mixture
rm -rf "$work"; mkdir -p "$work/text"
fail() { echo "FAIL: $*" >&2; exit 1; }
F=tests/data/clean
# Three sources from the cleaner fixtures: each document repeated so that every shard holds many windows.
for src in gcide linux-doc python-doc; do
    for split in train val; do
        n=$([ $split = train ] && echo 12 || echo 3)
        for i in $(seq $n); do cat $F/$src.expected; echo "<|endoftext|>"; done > "$work/text/$src.$split.txt"
    done
done
cat "$work"/text/*.train.txt > "$work/all.txt"
"$S" tokenize train --vocab-size 400 --out "$work/v.sxv" "$work/all.txt" 2>/dev/null
"$S" tokenize mixture --vocab "$work/v.sxv" --out "$work/mix" --sources gcide,linux-doc,python-doc "$work/text" 2> "$work/tok.log"
for src in gcide linux-doc python-doc; do
    for split in train val; do [ -f "$work/mix/$src.$split.shard" ] || fail "no $src.$split.shard"; done
done
# Default weights: each source's share of the train tokens.
python3 - "$work" <<'PY' || fail "default weights are not the token shares"
import re, sys
w = sys.argv[1]
log = open(w + "/tok.log").read()
tok = {m[0]: int(m[1]) for m in re.findall(r"mix/([\w-]+)\.train\.shard: \d+ documents, (\d+) tokens", log)}
spec = {l.split()[1]: float(l.split()[2]) for l in open(w + "/mix/mixture.mix") if l.startswith("source")}
tot = sum(tok.values())
assert set(tok) == set(spec) == {"gcide", "linux-doc", "python-doc"}, (tok, spec)
for k in tok:
    assert abs(spec[k] - tok[k] / tot) < 1e-5, (k, spec[k], tok[k] / tot)
PY
# Without --sources: the sources TEXT_DIR/STATS lists (fetch-data --mixture writes it), in its order; without
# STATS, a message that says what to do.
if "$S" tokenize mixture --vocab "$work/v.sxv" --out "$work/mix-stats" "$work/text" 2> "$work/err"; then
    fail "tokenize mixture without --sources and without STATS succeeded"
fi
grep -q "text/STATS (No such file or directory): without it, name the sources with --sources" "$work/err" ||
    fail "no STATS: $(cat "$work/err")"
printf 'source\tdocs\tbytes_in\npython-doc\t3\t100\ngcide\t3\t100\nlinux-doc\t3\t100\n' > "$work/text/STATS"
"$S" tokenize mixture --vocab "$work/v.sxv" --out "$work/mix-stats" "$work/text" 2>/dev/null
[ "$(awk '/^source/ {printf "%s ", $2}' "$work/mix-stats/mixture.mix")" = "python-doc gcide linux-doc " ] ||
    fail "sources from STATS: $(cat "$work/mix-stats/mixture.mix")"
"$S" tokenize mixture --vocab "$work/v.sxv" --out "$work/mix" --sources gcide,linux-doc,python-doc \
    --weights gcide=0.5,linux-doc=0.3,python-doc=0.2 "$work/text" 2>/dev/null
grep -q "^source gcide 0.5 gcide.train.shard gcide.val.shard$" "$work/mix/mixture.mix" || fail "--weights: $(cat "$work/mix/mixture.mix")"
# A source named twice, weighted twice, or left without a weight beside weighted ones is refused before anything
# is tokenized.
for bad in "--sources gcide,gcide:--sources: gcide is named twice" \
           "--sources gcide,linux-doc --weights gcide=1,gcide=2:--weights: gcide is weighted twice" \
           "--sources gcide,linux-doc --weights gcide=1:--weights gives every source's weight or none (the token shares): linux-doc has none"; do
    out=$("$S" tokenize mixture --vocab "$work/v.sxv" --out "$work/mix-bad" ${bad%%:*} "$work/text" 2>&1) && fail "${bad%%:*} passed"
    [ "$out" = "sextant tokenize: ${bad#*:}" ] || fail "${bad%%:*} said: $out"
    [ ! -e "$work/mix-bad" ] || fail "${bad%%:*} wrote $(ls "$work/mix-bad")"
done

common=(--model d1-w32-hd16 --train "$work/mix/mixture.mix" --batch 4 --seq 32 --steps 12 --lr 1e-2 --eval-every 6
        --eval-batches 2 --threads 2 --quiet --schedule cosine --warmup 2)
"$S" train "${common[@]}" --out "$work/run" >/dev/null 2>&1 || fail "training on the mixture failed"
python3 - "$work/run/metrics.jsonl" <<'PY' || fail "per-source validation losses"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if '"val_loss"' in l]
assert [e["step"] for e in ev] == [6, 12], [e["step"] for e in ev]
w = {"gcide": 0.5, "linux-doc": 0.3, "python-doc": 0.2}
for e in ev:
    per = {k: e["val_loss_" + k] for k in w}
    mix = sum(w[k] * per[k] for k in w)
    assert abs(e["val_loss"] - mix) < 1e-7 * mix, (e["val_loss"], mix)
    assert len(set(round(v, 6) for v in per.values())) == 3, per   # three different sets, not one copied
    assert all(2 < v < 7 for v in per.values()), per
print("ok")
PY
# Continue from the checkpoint kept at step 6: steps 7..12 repeat the straight run exactly (the sampler's
# picker and every source's loader position are in the checkpoint).
"$S" train "${common[@]}" --save-at 0.5 --out "$work/r2" >/dev/null 2>&1 || fail "run with --save-at failed"
"$S" train "${common[@]}" --branch-from "$work/r2/ckpt-6.sxt" --out "$work/r3" >/dev/null 2>&1 || fail "branch failed"
python3 - "$work/run/metrics.jsonl" "$work/r3/metrics.jsonl" <<'PY' || fail "continuing a mixture run changed its stream"
import json, sys
a = {json.loads(l)["step"]: json.loads(l)["train_loss"] for l in open(sys.argv[1])}
b = {json.loads(l)["step"]: json.loads(l)["train_loss"] for l in open(sys.argv[2])}
assert all(a[s] == b[s] for s in range(7, 13)), (a, b)
PY
# A bad spec: refused with file and line.
printf 'source a 1 x.shard y.shard\nsource a 2 x.shard y.shard\n' > "$work/bad.mix"
if "$S" train "${common[@]}" --train "$work/bad.mix" --out "$work/bad" 2> "$work/err"; then fail "a spec naming a source twice was accepted"; fi
grep -q "bad.mix:2: source a appears twice" "$work/err" || fail "bad spec message: $(cat "$work/err")"
# A ladder on the mixture: fit the weighted mix and one source (fit --val-set), forecast each; the fit and the
# forecast say which set they are of, and the two differ.
cat > "$work/mix.ladder" <<LADDER
name            mixlad
train           $work/mix/mixture.mix
model           d1-hd8-w{width}
widths          8 16 24 32
seeds           1
tokens_per_param 2
seq             16
batch           4
lr              2e-2
lr_ref_width    16
schedule        cosine
eval_batches    1
eval_at         0.5,1
LADDER
"$S" ladder run "$work/mix.ladder" --out "$work/lad" --jobs 2 2>/dev/null || fail "ladder on the mixture"
grep -q '"val_loss_python-doc"' "$work/lad/w8-s1/metrics.jsonl" || fail "ladder runs on a mixture log per-source losses"
# Its data-limited twin reads the capped data in epochs (the data law's first pass is fresh), and says so.
{ sed -e 's/^name .*/name mixlim/' -e 's/^widths .*/widths 8 16/' "$work/mix.ladder"; echo "unique_tokens 3000"; } > "$work/lim.ladder"
"$S" ladder run "$work/lim.ladder" --out "$work/lim" --jobs 2 2>/dev/null || fail "data-limited ladder on the mixture"
grep -q '"data_order": "epoch"' "$work/lim/w16-s1/config.json" || fail "a data-limited rung does not read its data in epochs"
"$S" fit "$work/mix.ladder" --runs "$work/lad" --out "$work/fit-mix.json" >/dev/null 2>&1 || fail "fit of the mix"
"$S" fit "$work/mix.ladder" --runs "$work/lad" --out "$work/fit-gcide.json" --val-set gcide > "$work/fitg.log" 2>&1 ||
    fail "fit --val-set gcide: $(cat "$work/fitg.log")"
grep -q "fitting validation set gcide (val_loss_gcide)" "$work/fitg.log" || fail "fit --val-set does not say which set"
grep -q '"val_set": "gcide"' "$work/fit-gcide.json" || fail "fit.json does not record its validation set"
cmp -s "$work/fit-mix.json" "$work/fit-gcide.json" && fail "fit --val-set gcide gave the mix's fit"
"$S" forecast --fit "$work/fit-gcide.json" --model d1-hd8-w48 --flops-ratio 2 --out "$work/fc-gcide.json" >/dev/null 2>&1 ||
    fail "forecast of one set"
grep -q '"val_set": "gcide"' "$work/fc-gcide.json" || fail "the forecast does not record its validation set"
if "$S" fit "$work/mix.ladder" --runs "$work/lad" --out "$work/x.json" --val-set nosuch 2> "$work/err"; then fail "an unknown set was fitted"; fi
grep -q 'no "val_loss_nosuch"' "$work/err" || fail "unknown set message: $(cat "$work/err")"
# A source's shard missing: the spec and the source are named (before: only "cannot open shard ...").
sed 's/\([a-z_]*\)\.val\.shard$/\1.gone.shard/' "$work/mix/mixture.mix" > "$work/mix/gone.mix"
if "$S" train --model d1-hd8-w16 --train "$work/mix/gone.mix" --batch 2 --seq 8 --steps 2 --out "$work/gone" --quiet 2> "$work/err"; then
    fail "a mixture with a missing validation shard trained"
fi
grep -q "gone.mix: source [a-z_]*'s validation data: cannot open shard" "$work/err" || fail "missing source shard: $(cat "$work/err")"
echo "mixture: all checks passed"
