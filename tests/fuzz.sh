#!/usr/bin/env bash
# Short fuzzing pass for the test suite: builds the libFuzzer targets (tests/fuzz/run), runs each for a few
# seconds, then replays every regression input under tests/fuzz/regressions/NAME/ (inputs that once crashed
# a parser) through its target. Skips (exit 0, with a message) only when clang is not installed.
set -u
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-5}
if ! command -v "${CLANG:-clang}" >/dev/null 2>&1; then
    echo "fuzz.sh: SKIPPED: clang not found (apt-get install clang libclang-rt-dev to fuzz the parsers)"
    exit 0
fi
fails=0
tests/fuzz/run "$secs" || fails=$((fails+1))
. tests/fuzz/limits
replayed=0
for dir in tests/fuzz/regressions/*/; do
    [ -d "$dir" ] || continue
    name=$(basename "$dir")
    inputs=("$dir"*)
    [ -e "${inputs[0]}" ] || continue
    tmp=$(mktemp -d)
    if TMPDIR=$tmp build-fuzz/fuzz_"$name" -runs=1 "${limits[@]}" "${inputs[@]}" \
        > build-fuzz/logs/replay-"$name".log 2>&1; then
        replayed=$((replayed + ${#inputs[@]}))
    else
        echo "FAIL: a regression input of $name crashes again:"
        grep -m1 -A8 'ERROR:\|runtime error' build-fuzz/logs/replay-"$name".log | sed 's/^/    /'
        fails=$((fails+1))
    fi
    rm -rf "$tmp"
done
echo "fuzz.sh: replayed $replayed regression inputs; $fails failed"
[ $fails -eq 0 ]
