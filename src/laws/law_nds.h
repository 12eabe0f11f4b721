// law_nds: the joint whole-curve law over model size, data and LR schedule, for ladders whose runs differ in
// size, length, batch and peak LR (curve ladders, runs/import.h):
//   L(N, t) = E + A·N^-alpha + B·N^eps·S(t)^-beta - D·LD(t)
//   S(t)  = b·sum_{i<=t} m_i            "schedule-weighted tokens": b tokens per step, m_i = lr_i/peak_lr
//   LD(t) = sum_{k<=t, m_k<m_{k-1}} (m_{k-1} - m_k)·(1 - (1 + C·sum_{tau=k..t} m_tau)^-g)
// With a constant LR it is Chinchilla's approach 3 at D = S (so a finished cosine run's S is its tokens
// weighted by its LR shape); LD is the multi-power law's annealing term (Luo et al. 2025) on the LR shape,
// over decreasing steps only (warmup does not enter), saturating at the total LR drop. The LR's scale
// (peak_lr) does not enter: each run is taken at its own, presumably tuned, peak.
// N^eps lets larger models gain more from more data (on the Misfitting ladder, 4x the steps lowers the final loss
// by 0.24 at 25M-100M and 0.29 at 400M; Chinchilla's additive form cannot say that).
// Parameters (positive): E, A, B, D linear (variable projection), alpha, beta, eps, C, g non-linear.
// t is a 0-based step index (the loss after updates 0..t), as in laws.h.
//
// Not responsible for: choosing runs or weights (laws/curvefit.h), fitting (laws/fit.h).
#ifndef SEXTANT_LAWS_LAW_NDS_H
#define SEXTANT_LAWS_LAW_NDS_H
#include <stddef.h>
#include "core/status.h"
#include "laws/fit.h"

enum { LAW_NDS_E, LAW_NDS_A, LAW_NDS_B, LAW_NDS_D, LAW_NDS_ALPHA, LAW_NDS_BETA, LAW_NDS_EPS, LAW_NDS_C, LAW_NDS_G, LAW_NDS_NPARAM };

// One run for the law: its size, tokens per step, the LR shape m[n_steps] (lr/peak), and the 0-based steps
// of its points.
typedef struct {
    double n_params, tokens_per_step;
    const double *mult;
    size_t n_steps;
    const size_t *steps;
    size_t n_points;
} law_nds_run;

// Binds the law to the runs' points (runs concatenated in order). Steps are merged into blocks of at most
// 32 consecutive LR drops between two points (a midpoint term each; exact for the drop), and far from a point
// aligned runs of blocks (a binary tree's nodes) count as one term at their mean (both together within 1e-4
// of LD's definition on a 30,000-step cosine run, tests/test_fit.c; a point costs O(log blocks) terms).
// Free with fit_law_free. Errors: SX_ERR_ARG (bad sizes, steps out of range), SX_ERR_NOMEM.
sx_status law_nds_bind(const law_nds_run *runs, size_t n_runs, fit_law *out);

// The name of parameter j ("E", "A", ..., "g": the keys of fit.json's "params").
const char *law_nds_param_name(size_t j);

// Predictions of params p at the runs' points (one call, any runs): pred[total points] overwritten.
sx_status law_nds_predict(const double p[LAW_NDS_NPARAM], const law_nds_run *runs, size_t n_runs, double *pred);

#endif
