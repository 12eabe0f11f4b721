#!/usr/bin/env bash
# sextant report (issue 23): the HTML page of a run (trained against a forecast) and of a ladder, rendered
# by headless Chromium: the DOM it builds has every section, the plots inline, one verification row per
# forecast point (those outside the band marked), one law row per fraction, one status row per run, the
# configuration; a screenshot is a rendered page, not a blank one. Plus the messages for bad targets.
set -u
S=${SEXTANT:-./sextant}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
A=tests/data/ladder/smoke-a.ladder
command -v chromium >/dev/null || { echo "chromium is missing: run scripts/setup"; exit 1; }
chrome() { timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/chrome" "$@" 2>/dev/null; }

"$S" ladder run $A --out "$tmp/a" --jobs 2 2> "$tmp/run.log" || { fail "ladder run"; cat "$tmp/run.log"; }
# Before the fit: the ladder's page says what to run.
"$S" report $A --runs "$tmp/a" --out "$tmp/unfitted.html" > /dev/null || fail "report of an unfitted ladder"
grep -q "Not fitted yet: run <code>sextant fit $A</code>" "$tmp/unfitted.html" || fail "unfitted ladder: no hint"
"$S" fit $A --runs "$tmp/a" > /dev/null || fail "fit"
"$S" forecast --fit "$tmp/a/fit.json" --model d1-hd8-w48 --flops-ratio 3 --schedule cosine --out "$tmp/fc.json" > /dev/null || fail "forecast"
"$S" train --model d1-hd8-w48 --train synthetic:64 --batch 4 --seq 16 --schedule cosine --warmup 0.05 --lr 7e-3 \
    --eval-batches 2 --forecast "$tmp/fc.json" --out "$tmp/hero" --quiet > /dev/null 2>&1 || fail "hero"

"$S" report "$tmp/hero" --fit "$tmp/a/fit.json" | grep -qx "wrote $tmp/hero/report.html" || fail "run report"
"$S" report $A --runs "$tmp/a" | grep -qx "wrote $tmp/a/report.html" || fail "ladder report"

# What Chromium makes of them.
chrome --dump-dom "file://$tmp/hero/report.html" > "$tmp/hero.dom"
chrome --dump-dom "file://$tmp/a/report.html" > "$tmp/ladder.dom"
count() { grep -o "$1" "$2" | wc -l; }
for id in summary plots verification config; do
    grep -q "<section id=\"$id\">" "$tmp/hero.dom" || fail "run page: no section $id"
done
for id in summary plots status laws config; do
    grep -q "<section id=\"$id\">" "$tmp/ladder.dom" || fail "ladder page: no section $id"
done
grep -q "<title>sextant run report: $tmp/hero</title>" "$tmp/hero.dom" || fail "run page title"
[ "$(count '<svg ' "$tmp/hero.dom")" -eq 2 ] || fail "run page: expected its curves and the forecast plot inline"
grep -q "Forecast vs observed: run $tmp/hero (d1-hd8-w48, cosine) from ladder smoke-a" "$tmp/hero.dom" || fail "forecast plot title"
rows=$(count '<tr class="\(inside\|outside\)">' "$tmp/hero.dom")
[ "$rows" -eq 6 ] || fail "verification table: $rows rows, want the forecast's 6 points"
outside=$(count '"inside": false' "$tmp/hero/forecast_report.json")
[ "$(count '<tr class="outside">' "$tmp/hero.dom")" -eq "$outside" ] || fail "points outside the band not marked ($outside)"
grep -q "mean band half-width: ±" "$tmp/hero.dom" || fail "run page: band summary"
grep -q '"model_config": {' "$tmp/hero.dom" || fail "run page: no configuration"
[ "$(count '<tr class="law">' "$tmp/ladder.dom")" -eq 6 ] || fail "laws table: want one row per fraction (6)"
grep -q "L(C) = [0-9.]* + [0-9.e+]*·C<sup>−[0-9.]*</sup>" "$tmp/ladder.dom" || fail "ladder page: final-loss law"
grep -q "Joint law over size, .*<b>L = [0-9.e+-]* + [0-9.e+-]*·N<sup>−[0-9.e+-]*</sup> + .*(N with.*; in-sample mean |error| [0-9.]*%; one size back [0-9.]*%)" \
    "$tmp/ladder.dom" || fail "ladder page: joint law"
grep -Eq '<td>0\.3[0-9]*+ \[0\.[0-9]+, 0\.[0-9]+\]</td>' "$tmp/ladder.dom" || fail "ladder page: laws without intervals"
[ "$(count '<td class="l">done</td>' "$tmp/ladder.dom")" -eq 16 ] || fail "status table: want 16 finished runs"
grep -q "tokens_per_param 5" "$tmp/ladder.dom" || fail "ladder page: no spec"

# Rendered, not blank: a white 1100 x 2400 page compresses to a few KB; the plots and tables make it large.
chrome --screenshot="$tmp/hero.png" --window-size=1100,2400 "file://$tmp/hero/report.html" > /dev/null
size=$(stat -c %s "$tmp/hero.png" 2>/dev/null || echo 0)
[ "$size" -gt 60000 ] || fail "screenshot of the run page is $size bytes: blank?"

# A ladder never run: its page (in the runs directory, made for it) lists every run as not started.
(cd "$tmp" && "$S" report "$OLDPWD/$A" > /dev/null) || fail "report of a ladder never run"
[ "$(grep -c '<td>-</td><td class="l">not started</td>' "$tmp/runs/smoke-a/report.html")" -eq 16 ] || fail "ladder never run: status"
# Bad targets: clear messages.
"$S" report "$tmp/nothere" 2>&1 | grep -q "no such run directory or ladder spec" || fail "missing target message"
"$S" report "$tmp/a" 2>&1 | grep -q "no config.json: not a run directory" || fail "non-run directory message"
mkdir "$tmp/curves" && echo '{}' > "$tmp/curves/ladder.json"   # a curve ladder (sextant import) is pointed elsewhere
"$S" report "$tmp/curves" 2>&1 | grep -q "curves is a curve ladder (sextant import): .*sextant backtest" || fail "curve ladder message"
"$S" report "$tmp/hero" --forecast "$tmp/nothere.json" 2>&1 | grep -q "nothere.json" || fail "missing forecast message"
# A flag of the other kind of target is refused, not ignored.
"$S" report "$tmp/hero" --runs "$tmp/a" 2>&1 | grep -q -- "--runs names a ladder spec's runs directory: $tmp/hero is a run" ||
    fail "--runs with a run directory"
"$S" report $A --runs "$tmp/a" --forecast "$tmp/fc.json" 2>&1 | grep -q -- "--forecast is checked against a run: $A is not a run directory" ||
    fail "--forecast with a ladder spec"
cp -r "$tmp/hero" "$tmp/hero-rel" && jq '.flags.forecast = "runs/fc.json"' "$tmp/hero/config.json" > "$tmp/hero-rel/config.json"
"$S" report "$tmp/hero-rel" 2>&1 | grep -q "the run's forecast runs/fc.json is not there from this directory .*: give --forecast" ||
    fail "a recorded relative forecast path, reported from elsewhere"
# Sealed documents edited after they were frozen are refused, not shown.
sed 's/"vocab": 64/"vocab": 65/' "$tmp/a/fit.json" > "$tmp/edited-fit.json"
cmp -s "$tmp/a/fit.json" "$tmp/edited-fit.json" && fail "the edit did not change fit.json"
"$S" report $A --runs "$tmp/a" --fit "$tmp/edited-fit.json" --out "$tmp/edited.html" 2>&1 |
    grep -q "edited-fit.json: sha256 does not match its content" || fail "an edited fit.json was not refused"
sed 's/"loss": \([0-9]\)\./"loss": 9./' "$tmp/fc.json" > "$tmp/edited-fc.json"
"$S" report "$tmp/hero" --forecast "$tmp/edited-fc.json" --out "$tmp/edited.html" 2>&1 |
    grep -q "edited-fc.json: sha256 does not match its content" || fail "an edited forecast.json was not refused"

echo "report.sh: $fails failed"
[ $fails -eq 0 ]
