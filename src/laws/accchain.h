// accchain: the chained downstream forecast for runs described by their size N and data D, as Gadre et al.
// 2024 make it: a final-loss law L(N, D) and an error-vs-loss law (acclaw.h) fitted on the same small runs,
// chained into err(L(N, D)) for a run never trained. The pair of forms (loss: Chinchilla's two exponents or
// Gadre's one; error: exponential or sigmoid) is chosen by leave-one-group-out (group = model size) on the
// fitted runs: each fold fits both laws without one size and predicts that size's error from its N and D
// alone; the lowest RMS relative error wins. Nothing outside the fitted runs enters the choice.
//
// Not responsible for: which runs are fitted or held out (the caller: cmd_accfit on the Gadre data), the
// ladder's per-fraction downstream forecast (forecast.h, which chains compute -> task loss -> accuracy).
#ifndef SEXTANT_LAWS_ACCCHAIN_H
#define SEXTANT_LAWS_ACCCHAIN_H
#include <stddef.h>
#include <jansson.h>
#include "core/status.h"
#include "laws/acclaw.h"
#include "laws/laws.h"

typedef enum { ACCCHAIN_LOSS_ND, ACCCHAIN_LOSS_ND1, ACCCHAIN_N_LOSS } accchain_loss_form;
const char *accchain_loss_name(accchain_loss_form f);   // "nd" (E + A/N^alpha + B/D^beta), "nd1" (beta = alpha)

// Fits a loss law to n runs by the fit engine (fit.h). least_squares 0: its default objective (Huber on log
// residuals); 1: least squares on the loss itself (log residuals weighted by the loss squared, to first
// order scipy's curve_fit objective, which the paper's code uses). p[LAW_ND_NPARAM] overwritten in the
// law's own order (laws.h). Errors as fit_law_run.
sx_status accchain_fit_loss(accchain_loss_form f, const double *params, const double *tokens, const double *loss,
                            size_t n, int least_squares, double *p);
double accchain_loss_eval(accchain_loss_form f, const double *p, double params, double tokens);

typedef struct {
    size_t n;
    const double *params, *tokens; // [n] N and D of each run
    const double *loss;            // [n] its measured loss
    const double *acc;             // [n] its accuracy (1 - average top-1 error)
    const size_t *group;           // [n] its model size (0-based), the unit left out
} accchain_data;

typedef struct {
    accchain_loss_form loss_form;        // the chosen pair, fitted on every run
    acclaw_form acc_form;
    double loss_p[LAW_ND_NPARAM];
    double acc_p[ACCLAW_MAX_PARAMS];
    double cv_err[ACCCHAIN_N_LOSS][ACCLAW_N_FORMS]; // leave-one-group-out RMS relative error of the chained
                                                    // error 1 - acc (INFINITY where a fold failed to fit)
    double cv_loss[ACCCHAIN_N_LOSS];                // the same for the loss law alone
    size_t n_groups;
} accchain_model;

// Chooses and fits the pair. Needs at least 3 groups. Errors: SX_ERR_ARG (too few runs or groups, a value
// out of range), SX_ERR_NUMERIC (no pair could be fitted in every fold).
sx_status accchain_fit(const accchain_data *d, accchain_model *m);
// The chained forecast for a run of params N and tokens D: its loss and its accuracy at that loss.
void accchain_predict(const accchain_model *m, double params, double tokens, double *loss, double *acc);
// {"loss_form", "loss_params": [..], "acc_form", "acc_params": [..], "cv": {"nd/exp": rms, ...}, "cv_loss": {..}}
json_t *accchain_model_to_json(const accchain_model *m);

#endif
