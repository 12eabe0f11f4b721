#!/usr/bin/env bash
# The failure policy under memory exhaustion (issue 20/21): every allocation goes through sx_alloc, whose
# test hook SEXTANT_FAIL_ALLOC_AT=k fails the k-th one. For every k in a short training run, a fit and a
# forecast (and an import, a curve ladder's fit, backtest and forecast), the command must end in a clean error (exit 1 or 2, one message saying what could not be
# allocated, no signal, no sanitizer report), until k passes its last allocation and it succeeds; and a
# training run stopped that way leaves a run directory that resumes (nothing half-written).
set -u
S=${SEXTANT:-./sextant}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

# sweep NAME SETUP COMMAND...: counts COMMAND's allocations (SEXTANT_ALLOC_COUNT), then for every k (every
# $stride-th, where set: commands of thousands) runs SETUP and COMMAND with the k-th allocation failing; after
# each failure runs $after (if set).
sweep() {
    local name=$1 setup=$2; shift 2
    local k n out rc
    eval "$setup"
    SEXTANT_ALLOC_COUNT=$tmp/count "$@" >/dev/null 2>&1 || { fail "$name: the command fails without a fault"; return; }
    n=$(cat "$tmp/count")
    for ((k = 1; k <= n; k += ${stride:-1})); do
        eval "$setup"
        out=$(SEXTANT_ALLOC_COUNT=$tmp/count SEXTANT_FAIL_ALLOC_AT=$k "$@" 2>&1 >/dev/null); rc=$?
        if [ $rc -eq 0 ] || [ $rc -gt 2 ]; then fail "$name, allocation $k of $n failing: exit $rc: $(echo "$out" | head -3)"; continue; fi
        printf "%s\n" "$out" | tail -n 1 | grep -q "cannot allocate\|out of memory" ||
            fail "$name, allocation $k of $n failing: said: $out"
        [ -n "${after:-}" ] && eval "$after"
    done
    echo "$name: $n allocations, each ${stride:+${stride}th }failure a clean error"
}

# A training run of two steps with a checkpoint after each; a stopped run must resume without the fault.
run=(train --model d1-w32-hd16 --train synthetic:64 --batch 2 --seq 16 --steps 2 --threads 2 --quiet --ckpt-every 1 --eval-every 1 --eval-batches 1)
after='[ -f "$tmp/r/checkpoint.sxt" ] && { "$S" "${run[@]}" --out "$tmp/r" --resume >/dev/null 2>&1 || fail "train: allocation $k failing left a run that does not resume"; }'
sweep train 'rm -rf "$tmp/r"' "$S" "${run[@]}" --out "$tmp/r"
after=

# A fit and a forecast of a three-rung ladder (one seed: without a seed bootstrap the fit makes about 150
# allocations, not 6000, so that every one can be failed in turn within seconds).
printf 'name t\ntrain synthetic:64\nmodel d1-hd8-w{width}\nwidths 8 16 24\nseeds 1\ntokens_per_param 2\nseq 16\nbatch 4\nlr 2e-2\nlr_ref_width 16\nschedule wsd:decay=0.2\nwarmup 0.05\neval_batches 1\neval_at 0.5,1\n' > "$tmp/t.ladder"
"$S" ladder run "$tmp/t.ladder" --out "$tmp/L" --jobs 2 2>/dev/null || fail "setup ladder"
sweep fit 'rm -f "$tmp/fit.json"' "$S" fit "$tmp/t.ladder" --runs "$tmp/L" --out "$tmp/fit.json"
[ -f "$tmp/fit.json" ] || "$S" fit "$tmp/t.ladder" --runs "$tmp/L" --out "$tmp/fit.json" >/dev/null 2>&1 || fail "setup fit"
sweep forecast 'rm -f "$tmp/fc.json"' "$S" forecast --fit "$tmp/fit.json" --model d1-hd8-w32 --flops-ratio 2 --out "$tmp/fc.json"
sweep "ladder plan" : "$S" ladder plan "$tmp/t.ladder"
# import of a curve ladder with an LR sweep cut to its best run (--best-lr) and a planned run (no curves)
printf 'run_id,group,n_params,tokens_per_step,total_steps,peak_lr,schedule,role\na,s,1e6,1000,100,0.001,cosine,fit\nb,s,1e6,1000,100,0.002,cosine,fit\nh,l,8e6,1000,800,0.001,cosine,heldout\n' > "$tmp/runs.csv"
printf 'run_id,step,loss\na,50,3.6\na,100,3.3\nb,50,3.5\nb,100,3.2\n' > "$tmp/curves.csv"
sweep import 'rm -rf "$tmp/I"' "$S" import --runs "$tmp/runs.csv" --curves "$tmp/curves.csv" --loss-col loss --best-lr --out "$tmp/I"
# fit, backtest and forecast of a curve ladder (4 sizes x 2 lengths): about 1,900, 1,500 and 480 allocations,
# every 19th / 17th / 7th (every one of them checked by hand once: each a clean error)
python3 -c "
print('run_id,group,n_params,tokens_per_step,total_steps,peak_lr,schedule,step,loss')
for k, N in enumerate([1e6, 2e6, 4e6, 8e6]):
    for T in (100, 200):
        for s in range(T // 5, T + 1, T // 5):
            print(f'r{k}-{T},g{k},{N:.0f},1000,{T},0.001,cosine,{s},{1.8 + 400 * N ** -0.35 + 300 * N ** 0.1 * (1000 * s) ** -0.5:.5f}')
" > "$tmp/small.csv"
"$S" import --curves "$tmp/small.csv" --loss-col loss --out "$tmp/C" > /dev/null 2>&1 || fail "setup curve ladder"
stride=19 sweep "fit (curve ladder)" 'rm -f "$tmp/cfit.json"' "$S" fit "$tmp/C" --out "$tmp/cfit.json"
[ -f "$tmp/cfit.json" ] || "$S" fit "$tmp/C" --out "$tmp/cfit.json" > /dev/null 2>&1 || fail "setup curve fit"
stride=17 sweep "backtest (curve ladder)" : "$S" backtest "$tmp/C"
stride=7 sweep "forecast (curve ladder)" 'rm -f "$tmp/cfc.json"' "$S" forecast --fit "$tmp/cfit.json" --ladder "$tmp/C" --run r3-200 --out "$tmp/cfc.json"

# The accuracy law on Gadre et al.'s downstream errors (the subset in tests/data)
sweep acc-fit 'rm -f "$tmp/acc.json"' "$S" acc-fit --gadre tests/data/gadre --out "$tmp/acc.json"

echo "alloc_faults.sh: $fails failed"
[ $fails -eq 0 ]
