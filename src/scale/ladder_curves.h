// ladder_curves: a finished sextant ladder as a curve ladder (runs/import.h) — the same thing `sextant
// import` makes from another trainer's logs, so fit, forecast, backtest and compare read both alike.
//   runs:   every main run and cooldown branch of the plan (id = its run directory, group = "w<width>",
//           N with and without embeddings, tokens per step, steps, peak LR, warmup and seed from its
//           config.json, flops_per_token = sextant's exact count); LR-sweep runs are left out (they are
//           off the ladder's LR rule, which the curve laws take as tuned);
//   curves: every evaluation (step, tokens, the LR of that step, the validation loss: "val_loss", or
//           "val_loss_<set>" for the spec's val_set) plus an LR-only row for every other step, so the
//           schedule travels exactly (warmup, branches) without a schedule string.
// Not responsible for reading run directories (scale/ladder_data.h) or writing the ladder directory
// (import_write_dir).
#ifndef SEXTANT_SCALE_LADDER_CURVES_H
#define SEXTANT_SCALE_LADDER_CURVES_H
#include "runs/import.h"
#include "scale/ladder_data.h"

// out overwritten (free with import_ladder_free, also after an error). Errors: SX_ERR_FORMAT (a run whose
// metrics do not cover its steps), SX_ERR_NOMEM.
sx_status ladder_curves_from_data(const ladder_data *d, import_ladder *out);

#endif
