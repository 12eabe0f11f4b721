// curvefit: whole-curve forecasts for curve ladders (runs/import.h): one joint law over size, data and LR
// schedule (laws/law_nds.h) fitted to every point of the chosen runs, its noise level, and its prediction
// for any run described by its metadata (size, tokens per step, length, warmup, schedule or LR column).
//
// Not responsible for: choosing which runs to fit or scoring forecasts (laws/backtest.h), the law itself.
#ifndef SEXTANT_LAWS_CURVEFIT_H
#define SEXTANT_LAWS_CURVEFIT_H
#include <stddef.h>
#include "core/status.h"
#include "runs/import.h"
#include "laws/law_nds.h"

typedef enum { CURVEFIT_W_POINT, CURVEFIT_W_SQRT, CURVEFIT_W_RUN } curvefit_weight;

typedef struct {
    int nonembed;          // 1: N = the parameters without embeddings; 0: with; -1 (backtest only): chosen
    double n_offset;       // N = the count less n_offset (with embeddings: an embedding-aware N when the ladder gives
                           // only N with embeddings, the offset standing for the unknown embedding count) [0]
    size_t loss;           // loss column
    double min_frac;       // fit only points at step >= min_frac·total_steps
    double max_frac;       // ... and <= max_frac·total_steps [1]
    curvefit_weight weight; // each point 1, 1/sqrt(points of its run), or 1/points of its run
} curvefit_options;

void curvefit_options_default(curvefit_options *o);

typedef struct {
    double p[LAW_NDS_NPARAM];
    int nonembed;
    double n_offset;
    size_t n_runs, n_points;
    double in_mean, in_max;  // in-sample |relative error|
    double sigma_noise;      // relative point noise from the residuals' high-frequency part
    double sigma_fit;        // RMS relative residual (misfit + noise)
} curvefit_model;

// The N the law sees for run r: its count without or with embeddings, less the offset.
double curvefit_n(const import_run *r, int nonembed, double n_offset);
// "without embeddings", "with embeddings" or "... embeddings less 1.43e+07" into buf.
void curvefit_n_name(int nonembed, double n_offset, char *buf, size_t cap);
// A run's points past the CURVEFIT_MAX_POINTS at or after min_frac are thinned for the fit to every stride-th
// (counted back from its last), weighted as the points they stand for: the fit's cost grows with its points,
// and a run logged every few steps carries no more about the law's nine parameters than a thousand of them.
#define CURVEFIT_MAX_POINTS 1000
size_t curvefit_stride(size_t points);
// The first of run r's points at or after min_frac of its length (the first a fit from min_frac reads).
size_t curvefit_first(const import_run *r, double min_frac);
// The first kept point of a run's points [first, n_points) and, in *stride, the step between kept points.
size_t curvefit_thin(size_t n_points, size_t first, size_t *stride);
// The points a fit of the runs with use[i] != 0 (use NULL: all) reads: at or after min_frac, thinned; *thinned
// (if not NULL) the runs thinned.
size_t curvefit_points(const import_ladder *l, const unsigned char *use, const curvefit_options *o, size_t *thinned);
// Fits the law to the runs with use[i] != 0 (use NULL: all). m overwritten.
sx_status curvefit_fit(const import_ladder *l, const unsigned char *use, const curvefit_options *o, curvefit_model *m);
// pred[n] overwritten with the law's loss after steps[n] (1-based, increasing, <= total_steps) of run r.
sx_status curvefit_predict(const curvefit_model *m, const import_run *r, const long *steps, size_t n, double *pred);

#endif
