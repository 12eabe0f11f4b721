// value_head: a scalar value head on a frozen trunk. Input: the trunk's features x at a step boundary
// (infer/trunk_features.h: its final-normed hidden state and its own step log-probabilities), standardised
// per dimension with the training rows' mean and
// standard deviation (u = (x − shift)·scale, fixed before training); one hidden layer, z = tanh(W1·u + b1)
// (H), logit v = w2·z + b2,
// value p = sigmoid(v) ∈ (0, 1). Trained with binary cross-entropy on soft targets y ∈ [0, 1]: outcome labels
// (an ORM) or Monte-Carlo step values (a PRM, infer/mc_labels.h), by AdamW over one flat parameter array.
// Saved as a tensorfile of kind "value_head" whose metadata names the trunk's width and parameter count, so a
// head is never applied to a trunk it was not trained on.
// Not responsible for computing features or labels (infer/verifier.h, infer/mc_labels.h).
#ifndef SEXTANT_INFER_VALUE_HEAD_H
#define SEXTANT_INFER_VALUE_HEAD_H
#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include "core/rng.h"
#include "core/status.h"

typedef struct {
    size_t in, hidden;
    size_t trunk_params;     // parameter count of the trunk it reads (checked on use)
    size_t n_params;
    float *p;                // flat: W1 (hidden, in), b1 (hidden), w2 (hidden), b2 (1)
    float *shift, *scale;    // (in) the input standardisation (0 and 1 until value_head_standardize)
} value_head;

// Allocates a head with small random weights (W1 ~ N(0, 1/in), w2 ~ N(0, 1/hidden), biases 0).
sx_status value_head_init(value_head *h, size_t in, size_t hidden, size_t trunk_params, uint64_t seed);
void value_head_free(value_head *h);
// Sets shift and scale from n training inputs x (n, in): mean and 1/standard deviation per dimension
// (scale 1 where a dimension is constant).
void value_head_standardize(value_head *h, const float *x, size_t n);
// Logit v for one input x (in). z: (hidden) scratch, overwritten with tanh(W1·x + b1).
double value_head_logit(const value_head *h, const float *x, double *z);
double value_head_prob(const value_head *h, const float *x, double *z);
// Mean binary cross-entropy over n inputs x (n, in) with soft targets y (n): −mean(y·log p + (1−y)·log(1−p)).
// When grad is not NULL it is overwritten with d(loss)/d(p) (n_params).
double value_head_loss(const value_head *h, const float *x, const float *y, size_t n, double *grad);
// FLOPs of one evaluation (the two products).
double value_head_flops(const value_head *h);

typedef struct {
    size_t epochs, batch;
    double lr, weight_decay;
    uint64_t seed;
} value_train_config;
// Examples held out of the gradient: inputs x (n, in), targets y (n).
typedef struct { const float *x, *y; size_t n; } value_split_set;
// Minibatch AdamW (β 0.9/0.999) over shuffled examples, c->epochs passes. With valid (may be NULL), early
// stopping: the parameters end as they were after the epoch with the lowest validation loss (*best_epoch,
// 1-based; without valid the last). *loss: the mean training loss of that epoch.
sx_status value_head_train(value_head *h, const float *x, const float *y, size_t n, const value_train_config *c,
                           const value_split_set *valid, double *loss, size_t *best_epoch);

// The file: kind "value_head", tensors "params", "shift", "scale", meta {in, hidden, trunk_params} plus the
// caller's extra keys.
sx_status value_head_save(const value_head *h, const char *path, json_t *extra);
// Reads a head (SX_ERR_FORMAT when the file is not one); *h is overwritten.
sx_status value_head_load(const char *path, value_head *h);
// True when path is a value-head file (as opposed to a model checkpoint).
bool value_head_is_file(const char *path);

#endif
