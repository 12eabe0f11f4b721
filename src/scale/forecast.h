// forecast: from a finished ladder to a forecast of a larger "hero" run's whole validation-loss curve,
// and the check of a run against a forecast. Method (docs/FORECAST.md):
//   scale:    at every shared training fraction f, L_f(C) = Linf_f + A_f·C^-alpha_f across rungs (rung =
//             seed-mean of its runs; C = the rung's whole-run training FLOPs), evaluated at the hero's C;
//   schedule: when the hero's schedule differs from the rungs', each rung's curves (main runs and cooldown
//             branches) fit a schedule law (multi-power law), and the forecast is multiplied by
//             law(hero schedule)/law(rung schedule) at f, taken from the largest rung;
//   band:     ±2σ with σ² = seed-bootstrap spread of the per-fraction extrapolation + the hero's own seed
//             noise (the rungs' seed-to-seed spread) + the spread of the schedule ratio across rungs;
//   joint:    the forecast is the mean of the above and the joint law (laws/law_nds.h) fitted to the ladder's
//             runs as a curve ladder (scale/curvecast.h); σ is the two σs' mean with half their disagreement.
// Not responsible for training (the ladder) or the fitting engine (laws/fit.h).
#ifndef SEXTANT_SCALE_FORECAST_H
#define SEXTANT_SCALE_FORECAST_H
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"
#include "scale/ladder.h"
#include "train/options.h"

// Reads every run of the ladder's plan under ladder_dir (main runs must be finished) and fits the laws.
// *fit receives a new JSON document (the content of fit.json), hashed like a forecast ("sha256": check it
// with forecast_verify_hash; write it at full precision).
sx_status forecast_fit_ladder(const ladder_spec *spec, const char *ladder_dir, json_t **fit);

typedef struct {
    const char *model;     // descriptor
    double tokens;         // training tokens (or:)
    double flops_ratio;    // > 0: tokens chosen so the hero's compute is this multiple of the largest rung's
    long batch, seq;       // 0: the ladder's
    const char *schedule;  // lr_schedule spec; "" = the ladder's
    double warmup;         // fraction; < 0: the ladder's
} hero_spec;

// The forecast document (forecast.json): hero, method, per-point {frac, step, loss, lo, hi} and a SHA-256
// of its canonical form ("sha256") so it can be preregistered. *out receives a new reference.
sx_status forecast_make(json_t *fit, const hero_spec *hero, json_t **out);
// Sets "sha256" of a document (forecast or fit, any kind) to the hash of the rest of it, so it can be preregistered.
void forecast_seal(json_t *doc);
// Recomputes the hash of a forecast (or fit) document and compares it with the stored one.
sx_status forecast_verify_hash(json_t *forecast, const char *path);

// A curve ladder's forecast (scale/curvecast: a target run of an imported ladder, checked with --check-run)
// carries this "kind"; a trained hero's forecast carries none.
#define FORECAST_KIND_CURVE "curve-forecast"
bool forecast_is_curve(const json_t *doc);

// Forecast points for a run of total_steps steps (the trainer's view while it trains).
typedef struct {
    size_t n;
    long *step;
    double *frac, *loss, *lo, *hi;
    char val_set[32];   // "" (the forecast is of val_loss) or the mixture source whose val_loss_<val_set> it is
} forecast_points;
sx_status forecast_points_load(const char *path, long total_steps, forecast_points *p);
void forecast_points_free(forecast_points *p);
// Index of the point at step, or -1.
long forecast_points_find(const forecast_points *p, long step);

// A frozen forecast verified while its run trains (`sextant train --forecast`; the CLI makes it the run's
// evaluation hook, train_options.eval_hook). forecast_watch_open reads the document and checks its sha256
// once; the points, every per-evaluation comparison and the final report come from that copy in memory,
// so editing the file while the run trains cannot change what is reported under its hash.
typedef struct {
    const char *path;           // borrowed, for messages and the report's heading
    json_t *doc;                // the verified document
    forecast_points points;     // for the run's length (the hook's start)
    train_eval_hook hook;       // ctx = this watch
} forecast_watch;
sx_status forecast_watch_open(forecast_watch *w, const char *path);
// The hero's steps (the run length a forecast is made for).
long forecast_watch_steps(const forecast_watch *w);
// Safe on a zeroed watch.
void forecast_watch_close(forecast_watch *w);


// Compares a run's evaluations with the forecast: per point relative error and inside-band flag; mean and
// max |relative error| over points after the first 10%, final-loss error, fraction inside the band, and the
// band's mean half-width relative to the forecast ("mean_band_halfwidth_rel": 0.037 is printed as ±3.70%).
// *report receives a new reference.
sx_status forecast_check_run(json_t *forecast, const char *run_dir, json_t **report);
void forecast_print_report(FILE *out, json_t *report);

#endif
