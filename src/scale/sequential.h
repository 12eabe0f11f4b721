// sequential: `compare --until-decided`, a comparison that adds seeds where they decide it soonest. Each
// comparison (scale/compare.h: paired seed jackknife t intervals) is a look; it stops when
//   decided: every variant is decided at its group-sequential level (below);
//   width:   every variant still undecided has a paired 95% multiplier interval narrower than `width`;
//   precision (instead of the two above, when `precision` is given): every variant's paired interval lies within
//            +-precision of its multiplier, decided or not (a decided variant keeps getting seeds until then);
//   budget:  the next round would pass the budget (training FLOPs, or wall-clock hours), or a rung would pass
//            the spec's limit of 1000 seeds;
// otherwise it adds seeds and trains the new runs of all ladders in one pool of the ladder runner (largest
// first).
// Verdicts: a test repeated at the fixed-sample 5% after every round decides far more often than 5% where
// there is no difference (19% at ten looks), so each look tests at a group-sequential level (scale/spending.h):
// a variant's information fraction at a look is the variance its paired interval would have at the budget's
// end (the FLOPs left placed by its noise) over its variance then (from the seeds per rung at each look and
// its rung_var now), the spending function (Pocock type by default) gives each look its nominal level, and
// Holm's step-down runs over the variants not yet decided, each at its level for alpha/m (Maurer & Bretz
// 2013). A variant decided at a look stays decided (its row's verdict is the sequential one); the look where
// the next round would pass the budget is the last and spends what is left. Every look is recorded in the
// baseline's directory (scale/look_record.h): a later --until-decided of the same comparison starts from those
// looks and verdicts, so its spending counts them. That holds the 5% for a study resumed within the budget it
// had (5.0% against 6.0% starting afresh, tests/test_spending.c); a run that extends a budget whose last look
// was final (all of the 5% spent) counts that look as an ordinary one at the new horizon, and can pass 5% (7.2%
// against 7.4%): a note says so. For another comparison of ladders holding added seeds, a note says their looks
// are not counted.
// Where: the comparison's paired per-rung jackknife says how much of each undecided variant's ln-multiplier
// variance comes from each rung's seeds (rung_var, v_r at S_r seeds); one more seed at rung r takes v_r/(S_r+1)
// off it, narrowing the interval by 1 − sqrt(1 − (v_r/(S_r+1))/Σv). A round serves the undecided variant
// nearest a decision (the fewest FLOPs to the narrowing that gives 80% power at its last level, or reaches
// `width`), seeds placed one by one at the rung with the most narrowing of its interval per FLOP of the seed
// in every ladder, up to 80% power at the level its next look would have (solved with the round: a larger
// round spends more alpha at its look) or the budget; so a round is as large as a decision needs and the looks
// are few (one seed a round, by the narrowing summed over the variants, gave 44 rounds of cheap seeds and
// left the largest rung, which one variant needed, at 3 seeds), but no rung's seeds more than doubled in one
// round: the need is sized on a variance estimated from the seeds so far, and from 5 seeds per rung it asked
// for up to 187 seeds at once in replays of the KV study. Then, up to `jobs` runs and at least one seed,
// at the rung with the most narrowing summed over the undecided variants; and a round that would leave less
// of the budget than it costs takes the rest too (no trail of ever smaller rounds). A seed goes to that rung of every
// ladder alike (seed k stays paired across them) and every ladder directory records its rungs' seed counts
// (scale/ladder_seeds.h), which `ladder`, `fit` and `compare` read back. While a rung has fewer than 5 seeds
// (a variance known to few degrees of freedom places seeds by its errors, and a rung whose noise was
// underestimated keeps the underestimate into the test), one round brings every rung to 5, or as far as the
// budget goes; where the noise cannot be estimated (no pairing, a multiplier that is not finite, no noise at
// all), a round adds one seed to every rung instead, as many in every ladder.
// When it stops undecided it estimates, per undecided variant, the seeds needed for 80% power for the test that
// decides (the t test of the estimated loss gain, at the level of its last look; the Holm level of the first
// undecided variant where it had none), or for its multiplier's interval to reach `width` when that is sooner:
// per rung alike (sequential_power_seeds, sequential_width_seeds: the standard error ∝ 1/√seeds, t quantiles on
// the degrees of freedom there), and placed by the noise as the rounds place them. The rounds size themselves on
// the same power. And it weighs a larger rung against seeds: the comparison's hypothetical next rung (one ladder step above the
// largest, as many seeds as it, seed noise like its) narrows the interval by so much for its FLOPs, seeds
// placed by the noise by so much for the same FLOPs; where the rung buys more, the interval is mostly the
// extrapolation's leverage and the advice is a larger rung.
// Rungs: before each round the same weighing is made for a real rung (unless seeds_only): a width one ladder step
// above the largest (next_width: its runs' FLOPs nearest x0^2/x1, a multiple of the widths' common divisor, taken by
// every ladder's model), as many seeds as the largest rung has, its real FLOPs within the budget. Where the rung
// narrows the open intervals more than seeds for those FLOPs (summed over them), the round trains it in every ladder
// instead of seeds (recorded in each seeds.json before it trains, so a rerun resumes it). Its estimator is not the
// one the looks before tested (the law is fitted to other rungs), so a rung starts a new stage of looks: the looks
// before it spent spend(t, a) by the information fraction t of their last look, and the new stage tests as a
// group-sequential test of its own at what is left, a - spend(t, a) (Bonferroni over the stages: their errors
// add at most to a; the stages are recorded with the looks). On fake ladders of three rungs compared 1000x past
// the largest the rung narrowed the interval by 70% against 65% for seeds; with five rungs seeds won (38% vs 59%,
// tests/test_compare.c): a rung pays where few rungs carry a long extrapolation.
// Not responsible for the statistics (scale/compare.h) or training (scale/ladder.h).
#ifndef SEXTANT_SCALE_SEQUENTIAL_H
#define SEXTANT_SCALE_SEQUENTIAL_H
#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"
#include "scale/ladder.h"

typedef struct {
    double width;          // > 0: stop when every undecided paired interval is narrower (multiplier units)
    double precision;      // > 0: stop only when every paired interval is within +-precision of its multiplier
                           // (relative: 0.15 for +-15%); seeds go to the variants short of it; width unused
    double budget_flops;   // > 0: training FLOPs the command may spend (the ladders' own seeds not trained yet,
                           // which it trains first, count)
    double budget_hours;   // > 0: wall-clock time the command may take (those first seeds' training
                           // counts); a round starts only if the time left covers its estimate: its
                           // FLOPs x the seconds per FLOP of the training before, or where it trained
                           // nothing yet those the baseline's largest run logged (no estimate when it
                           // logged no throughput)
    const char *exe;       // the sextant binary the ladder runner starts (`exe train ...`)
    int jobs;              // runs trained at once
    double (*spend)(double t, double alpha);   // the alpha spending function (scale/spending.h)
    const char *spending;  // its name, for the report ("Pocock-type", "O'Brien-Fleming-type")
    bool seeds_only;       // never add a rung
} sequential_options;

// specs[0] is the baseline; their rung_seeds grow as seeds are added (and are written to each dirs[i]/seeds.json
// after every round). *report receives the last compare report, its rows' "decided" and "verdict" the
// sequential ones, with each row's "decided_look" (0: the ladders as given; null while undecided) and
// "sequential_level" (the nominal level of its last test), the report's "verdict_rule" (in words), and
// "until_decided": {"stop": "decided"|"width"|"precision"|"budget"|"narrowing", "rounds", "looks" (an earlier run's
// too), "earlier_looks", "spending", "seeds" (the fewest of any rung, at the end), "rung_seeds" (per rung, plan
// order), "widths" (the baseline's rungs), "flops_spent" (training FLOPs, the first seeds' included), "flops_first"
// (the ladders' own seeds it trained before the first look), "seconds" (the whole command's), "width", "precision",
// "budget_flops", "budget_hours", "allocation": [per round trained: {"round", "placed": "by noise"|"every rung"|
// "new rung", "widths", "added" (seeds per rung), "shrink" (per variant: the narrowing the noise model expected,
// or null), "for" (the variant it served, or null), "new_width" (a new rung only), "flops"}], "rungs_added":
// [widths, this run],
// "more_seeds_level": [per variant: the level that power is for, or null],
// "more_seeds": [per variant: seeds per rung still needed (with precision: for it), or null where decided (with
// precision: precise enough), narrow enough, or no estimate is possible (multiplier estimate exactly 1 or unbounded)], "more_seeds_rungs": [per variant: the seeds to
// add at each rung when placed by the noise, or null], "more_seeds_flops": [their FLOPs, or null],
// "extrapolation" (paired only): {"next_rung_flops", "seeds", "flops", "rung_shrink", "seed_shrink" (per
// variant, or null), "bound" (a larger rung narrows the open intervals more than seeds for its FLOPs, summed)}}.
sx_status sequential_compare(ladder_spec *specs, const char *const *dirs, size_t n, double target_flops, bool shared_linf,
                             const sequential_options *o, json_t **report);
// Seeds per rung (in all, from `seeds` now) for 80% power to decide an effect (|ln multiplier|) at two-sided
// level a, given its standard error se on df degrees of freedom now: the N where se sqrt(seeds/N) times
// t(1-a/2) + t(0.8), both on df (N-1)/(seeds-1) degrees of freedom (the Welch-Satterthwaite df of rungs that
// all grow alike), equals the effect. With the t quantiles it is larger than the normal-quantile estimate,
// most at few seeds; normal quantiles where df is not finite or seeds < 2. NAN for no effect or no se.
double sequential_power_seeds(double effect, double se, double df, size_t seeds, double a);
// Seeds per rung (in all, from `seeds` now) for the paired 95% interval of a multiplier (the estimate, and
// its ln's standard error se on df degrees of freedom now) to be no wider than width (multiplier units): the N
// where exp(ln multiplier +- t se sqrt(seeds/N)) is width wide, t the 97.5% quantile on df (N-1)/(seeds-1)
// degrees of freedom as in sequential_power_seeds. Fewer than with today's quantile held, most at few seeds;
// the normal quantile where df is not finite or seeds < 2. NAN for no multiplier, se or width.
double sequential_width_seeds(double multiplier, double se, double df, size_t seeds, double width);
// The same for the paired interval to lie within +-precision of the multiplier (relative), as
// sequential_width_seeds at ln half-width ln(1 + precision), its wider side. NAN for no se or precision.
double sequential_precision_seeds(double se, double df, size_t seeds, double precision);
// Training FLOPs of adding one more seed to every rung of the ladder under dir: runs already finished cost
// nothing; a cooldown branch costs what it trains beyond its branch point.
sx_status sequential_round_flops(const ladder_spec *spec, const char *dir, double *flops);
// The first of the n ladders holding seeds or a rung a --until-decided added (its seeds.json, read into the spec,
// gives a rung more than the spec's seeds, or adds one), or NULL. Those seeds were tested as they came: a fixed-sample comparison
// of them does not count those looks.
const char *sequential_seeds_added(const ladder_spec *specs, size_t n);
// The stop reason, the seeds per rung and, when undecided, the power estimates and the larger rung weighed
// against seeds: a few lines.
void sequential_print(FILE *out, json_t *report);

#endif
