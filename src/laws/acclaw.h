// acclaw: accuracy as a function of task loss, the second step of a downstream forecast (compute -> task
// loss -> accuracy; docs/FORECAST.md, "Task accuracy"). Two forms:
//   sigmoid (Llama 3):      acc = floor + (ceil - floor) / (1 + exp(k (L - L0)))
//   exponential (Gadre et al. 2024): err = 1 - acc = e - k exp(-g L)
// each fitted by weighted nonlinear least squares (GSL trust-region Levenberg-Marquardt from a grid of
// starts), every accuracy weighted by its binomial variance p(1-p)/n. The form is chosen by leave-one-group-
// out (group = ladder rung): the lower held-out RMS error wins. A law is only trusted when it explains the
// accuracies better than a constant does (a chi-square test); otherwise the task is flat at this scale
// ("chance" or "ceiling") and its forecast band is wide instead of a fit through noise.
//
// Not responsible for: where the points come from (rundir tasks, CSV), the task-loss forecast (forecast.h).
#ifndef SEXTANT_LAWS_ACCLAW_H
#define SEXTANT_LAWS_ACCLAW_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "core/status.h"

typedef enum { ACCLAW_SIGMOID, ACCLAW_EXP, ACCLAW_N_FORMS } acclaw_form;
#define ACCLAW_MAX_PARAMS 4

// Parameter count and names of a form: sigmoid floor, ceil, k, L0; exponential e, k, g.
size_t acclaw_n_params(acclaw_form f);
const char *acclaw_form_name(acclaw_form f);        // "sigmoid", "exp"
const char *acclaw_param_name(acclaw_form f, size_t j);
// The law's accuracy at loss L.
double acclaw_eval(acclaw_form f, const double *p, double loss);

typedef struct {
    size_t n;
    const double *loss;   // [n] task loss of each point
    const double *acc;    // [n] accuracy in [0, 1]
    const double *items;  // [n] items behind each accuracy; NULL (or 0 at a point): unknown, weight 1
    const size_t *group;  // [n] group (rung) of each point, for leave-one-group-out; NULL: each point its own
} acclaw_data;

typedef struct {
    acclaw_form form;
    double p[ACCLAW_MAX_PARAMS];
    double chi2;        // sum of w_i (law - acc_i)^2
    double dispersion;  // chi2 per degree of freedom, at least 1: how much more the points scatter than binomial
    double loro_rmse;   // leave-one-group-out RMS accuracy error (NAN with fewer than 3 groups)
} acclaw_fit;

// One form fitted to all points. Errors: SX_ERR_ARG (fewer points than parameters, a value out of range),
// SX_ERR_NUMERIC (no start converged).
sx_status acclaw_fit_form(const acclaw_data *d, acclaw_form form, acclaw_fit *out);

typedef enum { ACCLAW_INFORMATIVE, ACCLAW_CHANCE, ACCLAW_CEILING } acclaw_status;
const char *acclaw_status_name(acclaw_status s);   // "informative", "chance", "ceiling"

typedef struct {
    acclaw_status status;
    acclaw_fit forms[ACCLAW_N_FORMS];   // both forms (form order); ok[f] says which converged
    int ok[ACCLAW_N_FORMS];
    acclaw_form chosen;                 // lower leave-one-group-out error (in-sample chi2 with < 3 groups)
    double level;                       // weighted mean accuracy (the constant model)
    double min_acc;                     // lowest accuracy seen
    double chi2_const;                  // chi2 of the constant model
    double model_sd;                    // the chosen law's held-out error beyond binomial noise (accuracy units)
    double loss_lo, loss_hi;            // loss range of the points
    size_t n_points, n_groups;
    size_t n_boot;
    double *boot;                       // [n_boot x ACCLAW_MAX_PARAMS] parametric-bootstrap refits of the chosen form
} acclaw_model;

// Fits both forms, chooses one, tests it against a constant and bootstraps the chosen one (n_boot refits on
// accuracies redrawn around the law with the binomial variance scaled by the dispersion). Deterministic in seed.
sx_status acclaw_model_fit(const acclaw_data *d, size_t n_boot, uint64_t seed, acclaw_model *m);
// As acclaw_model_fit with the form fixed (no choice).
sx_status acclaw_model_fit_form(const acclaw_data *d, acclaw_form form, size_t n_boot, uint64_t seed, acclaw_model *m);
void acclaw_model_free(acclaw_model *m);

// The accuracy forecast at a task loss known to relative standard deviation loss_sd_rel, for an evaluation
// of `items` items (0: the law's mean accuracy, no sampling error): point (the chosen law at loss), and a
// 95% band from the bootstrap laws, the loss uncertainty, the law's held-out error and the binomial error.
// Flat tasks: at chance the band runs from the chance level to 1 (the ladder cannot say when the task
// starts to rise), at the ceiling from below the lowest accuracy seen to 1. Deterministic in seed.
void acclaw_predict(const acclaw_model *m, double loss, double loss_sd_rel, double items, uint64_t seed, double *acc,
                    double *lo, double *hi);

// {"status", "form", "params": {name: v}, "forms": {name: {"params", "chi2", "dispersion", "loro_rmse"}},
// "level", "min_acc", "chi2_const", "model_sd", "loss_range", "points", "groups", "boot": [[...]]}.
json_t *acclaw_model_to_json(const acclaw_model *m);
sx_status acclaw_model_from_json(json_t *j, acclaw_model *m);

#endif
