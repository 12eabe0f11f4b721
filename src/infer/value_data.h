// value_data: the training and held-out examples of the value heads, collected from the policy's own samples.
// One row per complete line (step) of a sample: the policy trunk's features after that line (infer/
// trunk_features.h, at its '\n'), its Monte-Carlo value label (infer/mc_labels.h; the last line: the outcome), the
// sample's outcome, whether the row is the sample's last, and its problem's split (training, validation for early
// stopping, held-out test).
// Not responsible for sampling the solutions or for training (infer/value_head.h).
#ifndef SEXTANT_INFER_VALUE_DATA_H
#define SEXTANT_INFER_VALUE_DATA_H
#include <stdbool.h>
#include <stddef.h>
#include "infer/mc_labels.h"
#include "infer/trunk_features.h"
#include "infer/value_head.h"

typedef enum { VD_TRAIN = 0, VD_VALID, VD_TEST } value_split;

typedef struct {
    size_t n, cap, width;
    float *x;                 // (n, width)
    float *label, *outcome;   // (n)
    bool *last;               // (n)
    unsigned char *split;     // (n) value_split
    size_t rollouts;          // policy completions sampled for the labels
} value_data;

void value_data_init(value_data *v, size_t width);
void value_data_free(value_data *v);
// Appends the rows of one solution (complete lines) of problem p: features from the trunk reader (width
// v->width = trunk_feature_dim), labels from r rollouts of mp per step (mp->d may be the trunk's decoder).
sx_status value_data_add(value_data *v, trunk_reader *trunk, const mc_policy *mp, const arith_problem *p, const char *solution,
                         value_split split, size_t r, rng_state *rng);
// Copies the rows of one split (and, when last_only, only last rows) into x (rows, width) and y (rows): y the
// outcome (outcome_target) or the step label. Returns the row count; x, y NULL just counts.
size_t value_data_select(const value_data *v, value_split split, bool last_only, bool outcome_target, float *x, float *y);

// A value head fitted on the training rows (early-stopped on the validation rows) and judged on the test rows:
// an outcome head (ORM: last rows, outcome targets) or a process head (PRM: every row, Monte-Carlo targets).
// *h is overwritten (free it).
typedef struct {
    double train_loss;
    double auroc, ece;        // held-out samples' final score (the last row) against their outcome
    double step_ece;          // held-out rows' scores against their Monte-Carlo labels
    size_t train_rows, held_samples, best_epoch;
} value_fit_report;
sx_status value_data_fit(const value_data *v, bool outcome_head, size_t hidden, size_t trunk_params,
                         const value_train_config *tc, value_head *h, value_fit_report *rep);

#endif
