#!/usr/bin/env bash
# The fast part of bench/public_ladders.sh (SMOKE=1: Marin isoFLOP, Chinchilla, Gadre's over-training grid and the
# Step Law grid, a few seconds; and the multi-power-law curves at 25M, about 10 s) on the public data, through import + backtest / fit on the CLI path: Chinchilla's approach 3 lands
# inside Epoch's published 95% intervals and on the exact replication's parameters; Marin's validation-optimal
# runs, Gadre's 1.4B and 6.9B runs (imported with warmups longer than their shortest runs) and Step Law's 1.07B
# runs (N without embeddings only) and its MoE grid's largest layout (too few points one size back) are forecast
# at the errors recorded in docs/FORECAST.md. Skipped (passing) where ../shared/data is absent.
set -u
DATA=${SEXTANT_DATA:-../shared/data}
[ -f "$DATA/chinchilla_epoch_extracted.csv" ] && [ -f "$DATA/marin_isoflop_2026.csv" ] || { echo "public_ladders: SKIP (no $DATA)"; exit 0; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
SEXTANT=${SEXTANT:-./sextant} SMOKE=1 MPL_SIZES=25M bash bench/public_ladders.sh "$tmp" "$DATA" > "$tmp/out.txt" 2>&1
python3 - "$tmp/out.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
bad = []
published = {"E": (1.769, 1.871, 1.8172), "alpha": (0.317, 0.373, 0.34731), "beta": (0.331, 0.415, 0.36718)}
for k, (lo, hi, rep) in published.items():
    m = re.search(rf"^  {k} +([0-9.]+) ", text, re.M)
    if not m or not lo < float(m[1]) < hi or abs(float(m[1]) - rep) > 1e-3 * rep: bad.append(f"Chinchilla {k}: {m and m[1]}")
for mix, n, want in (("comma", "auto", 0.528), ("comma", "embed", 0.550), ("nemotron", "auto", 0.324), ("nemotron", "embed", 0.323)):
    m = re.search(rf"== {mix} \(--n {n}\)\n(?:.*\n)*?nds +(\d+) +([0-9.]+)%", text)
    if not m or abs(float(m[2]) - want) > 0.05: bad.append(f"Marin {mix} --n {n}: nds mean {m and m[2]}% (recorded {want}%)")
# the forecaster above the training sizes (one size back): the joint law on c4, the per-fraction law on the others
for ds, want, chosen in (("c4_original", 6.548, None), ("rpj", 2.438, 1.126), ("rw_original", 3.032, 0.963)):
    sec = text.split(f"== {ds}\n")[-1].split("\n== ")[0]
    m, c = re.search(r"^nds +3 +([0-9.]+)%", sec, re.M), re.search(r"^chosen +3 +([0-9.]+)%", sec, re.M)
    if not m or abs(float(m[1]) - want) > 0.05: bad.append(f"Gadre {ds}: nds mean {m and m[1]}% (recorded {want}%)")
    if (c is None) != (chosen is None) or (c and abs(float(c[1]) - chosen) > 0.05):
        bad.append(f"Gadre {ds}: the chosen forecaster's mean {c and c[1]}% (recorded {chosen})")
# Step Law (N without embeddings only): the offsets apply to that count and are named for it
sec = text.split("== loss\n")[-1].split("\n== ")[0]
m = re.search(r"^nds +2 +([0-9.]+)%", sec, re.M)
if not m or abs(float(m[1]) - 0.038) > 0.01 or "(N without embeddings less 5.37e+07; loss loss;" not in sec:
    bad.append(f"Step Law: nds mean {m and m[1]}% (recorded 0.038%), N named: {'without embeddings less' in sec}")
# Step Law MoE (3 layouts of 4 final losses fitted: 8 points below the largest, fewer than the law's 9
# parameters; before: refused): N chosen leaving one run out, and said
sec = text.split("== moe loss\n")[-1].split("\n== ")[0]
m = re.search(r"^nds +4 +([0-9.]+)%", sec, re.M)
if not m or abs(float(m[1]) - 1.148) > 0.05 or "N chosen by the error leaving one run out" not in sec \
        or "(the sizes below the largest give 8 points, fewer than the law's 9 parameters), not one size back" not in sec:
    bad.append(f"Step Law MoE: nds mean {m and m[1]}% (recorded 1.148%), leaving one run out said")
# The multi-power-law curves at 25M (the six held-out schedules from three): the multi-power law chosen leaving
# one curve out, its mean error and its band as forecast gives it (the larger of its errors leaving one curve out
# and one length back, times the doublings past the 24,000 trained steps; leaving one curve out alone: 76.9%)
sec = text.split("== 25M\n")[-1].split("\n== ")[0].split("\n## ")[0]
m = re.search(r"^mpl +1622 +([0-9.]+)% .* ([0-9.]+)% \(±([0-9.]+)%\)$", sec, re.M)
if not m or abs(float(m[1]) - 0.174) > 0.01 or float(m[2]) < 99 or "-> mpl (one length back, for the bands:" not in sec:
    bad.append(f"MPL 25M: mpl mean {m and m[1]}% (recorded 0.174%), band {m and m[2]}% (recorded 99.9%)")
for b in bad: print("FAIL:", b)
if bad: print(text)
sys.exit(1 if bad else 0)
PY
rc=$?
# A target described by flags must give the count the fit's law reads: Marin's fit reads N without embeddings,
# and --n-params alone in its place would forecast another size (before: taken as the count without).
S=${SEXTANT:-./sextant}
M="$tmp/bench/public/marin_comma"
"$S" fit "$M" > "$tmp/mfit.log" 2>&1 || { echo "FAIL: fit marin_comma: $(cat "$tmp/mfit.log")"; rc=1; }
desc=(--tokens-per-step 1e6 --total-steps 5000 --schedule constant --out "$tmp/mfc.json")
out=$("$S" forecast --fit "$M/fit.json" --n-params 2e9 "${desc[@]}" 2>&1) && { echo "FAIL: --n-params alone accepted"; rc=1; }
grep -q "the fit's law reads N without embeddings: give --n-params-nonembed" <<<"$out" || { echo "FAIL: said: $out"; rc=1; }
"$S" forecast --fit "$M/fit.json" --n-params 2e9 --n-params-nonembed 1.5e9 "${desc[@]}" > /dev/null 2>&1 ||
    { echo "FAIL: forecast with both counts"; rc=1; }
# ... and a forecast above the sizes of a ladder measured leaving one run out repeats the warning
MoE="$tmp/bench/public/steplaw_moe"
run=$(grep ',heldout$' "$MoE/runs.csv" | tail -1 | cut -d, -f1)
"$S" fit "$MoE" > /dev/null 2>&1 && out=$("$S" forecast --fit "$MoE/fit.json" --ladder "$MoE" --run "$run" --out "$tmp/moe.json" 2>&1) &&
    grep -q "^note: N was chosen and the band's extrapolation term measured leaving one run out (the sizes below" <<<"$out" ||
    { echo "FAIL: MoE forecast without the note: $out"; rc=1; }
[ $rc -eq 0 ] && echo "public_ladders: all checks passed"
exit $rc
