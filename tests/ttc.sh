#!/usr/bin/env bash
# The test-time-compute pipeline end to end at smoke size: policy training, verifier training on the
# policy's labelled samples, every strategy, JSON and SVG outputs (the numbers are meaningless at this size).
set -u
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
SEXTANT=${SEXTANT:-./sextant} scripts/ttc-demo "$tmp/t" --smoke > "$tmp/log" 2>&1 || { cat "$tmp/log"; echo "ttc-demo --smoke failed"; exit 1; }
for f in ttc.json ttc_strategies.svg ttc_sizes.svg; do
    [ -s "$tmp/t/$f" ] || { echo "missing $f"; cat "$tmp/log"; exit 1; }
done
grep -q '"majority' "$tmp/t/ttc.json" || { echo "ttc.json lacks the voting strategy"; exit 1; }
# Every chart names what it shows (issue 23): the policy and the problem count.
text() { sed 's/<tspan x[^>]*>/ /g; s/<[^>]*>//g' "$1"; }   # a long title wraps onto a second line
text "$tmp/t/ttc_strategies.svg" | grep -q 'Accuracy vs samples N: policy [^ ]*checkpoint.sxt, [0-9]* problems' || { echo "strategies chart title"; exit 1; }
text "$tmp/t/ttc_sizes.svg" | grep -q 'equal inference FLOPs: [0-9]* policies, [0-9]* problems' || { echo "sizes chart title"; exit 1; }
echo "ttc.sh: ok"
