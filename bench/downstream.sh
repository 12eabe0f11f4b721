#!/usr/bin/env bash
# bench/downstream.sh [DATA_DIR]: the issue-27 public check of the accuracy-vs-loss law on Gadre et al. 2024's
# over-training runs (shared/data, gadre_*.csv), on the CLI path a user takes (`sextant acc-fit --gadre`):
#   paper protocol: fit err = e - k exp(-g L) (17-task average top-1 error vs C4 eval loss) on the paper's six
#     runs, predict its targets (RPJ: 1.4B at M = 640 and 6.9B at M = 20; the paper reports 3.64% and 0.05%
#     relative error, scaling_explorer.ipynb); the same on C4 and RefinedWeb (6.9B target) and on all 46 tasks;
#   small protocol: fit every run under 1B parameters (all token multipliers), predict every larger run;
#   the form chosen by leave-one-size-out (--form auto) beside the paper's exponential;
#   chain protocol: a loss law L(N, D) and the error law both fitted on the runs under 1B, their forms chosen by
#     leave-one-size-out of the chained error on those runs only, every larger run predicted from N and D alone.
# Every table also shows the chained prediction (the paper protocol's with the paper's loss law, fitted as its
# code fits it: it reproduces the paper's 3.64% and 0.05%).
# Not responsible for: the ladder-side downstream forecast (fit/forecast on task_* metrics; tests/downstream_chain.sh).
set -uo pipefail
DATA=${1:-../shared/data}
S=${SEXTANT:-./sextant}
[ -f "$DATA/gadre_overtraining_runs.csv" ] || { echo "downstream: no Gadre data in $DATA"; exit 0; }
for ds in rpj c4_original rw_original; do
    echo "== $ds, paper protocol, 17 tasks"
    "$S" acc-fit --gadre "$DATA" --dataset "$ds" | sed -n '2,$p'
done
echo "== rpj, paper protocol, 46 tasks"
"$S" acc-fit --gadre "$DATA" --tasks 46 | sed -n '2,$p'
for ds in rpj c4_original rw_original; do
    echo "== $ds, chain protocol (both laws on every run under 1B, forms by leave-one-size-out), 17 tasks"
    "$S" acc-fit --gadre "$DATA" --dataset "$ds" --protocol chain | sed -n '2,$p'
done
for form in exp auto; do
    echo "== rpj, small protocol (every run under 1B -> every larger run), form $form"
    "$S" acc-fit --gadre "$DATA" --protocol small --form "$form" | sed -n '2,$p'
done
