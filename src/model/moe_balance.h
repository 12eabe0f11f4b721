// moe_balance: an MoE layer's expert selection under a selection bias b, and the per-step updates of b (the
// router's load balancing without a gradient). DeepSeek-V3 sign balancing nudges b by a fixed rate against each expert's load; Quantile
// Balancing (Jianlin Su; Marin) replaces b by the prices of one dual step of the balanced-assignment LP, with
// no hyperparameter. Responsible for these formulas only; scores, combine weights, the statistics'
// accumulation over micro-batches and ranks, and the tensors are ffn_moe.c's and model.c's.
#ifndef SEXTANT_MOE_BALANCE_H
#define SEXTANT_MOE_BALANCE_H
#include <stddef.h>
#include <stdint.h>

// Each token's K experts: the K largest key + bias (ties to the lower index; bias may be NULL) into idx (T,K),
// in descending order. With alpha, also each token's (K+1)-th largest key + bias, QB's token threshold, into
// alpha (T) (needs K < E). key (T,E).
void moe_choose(size_t T, size_t E, size_t K, const float *key, const float *bias, int32_t *idx, float *alpha);

// DeepSeek-V3: b_e += rate·sign(mean load − load_e) (raise under-loaded experts, lower over-loaded ones).
// load (E): tokens routed to each expert over the step.
void moe_bias_sign_update(size_t E, float rate, const float *load, float *b);

// QB prices of one batch. u (T,E): unbiased router logits; alpha (T): each token's threshold, the (K+1)-th
// largest of u_t + b. beta_e (overwritten) = the max(1, ⌊T·K/E⌋)-th largest of the column margins
// m_{t,e} = u_{t,e} − alpha_t (the (1 − K/E) upper quantile): the price at which expert e would take its fair
// share T·K/E. col: T floats of scratch. Deterministic (the k-th largest value does not depend on the order).
void moe_qb_prices(size_t T, size_t E, size_t K, const float *u, const float *alpha, float *col, float *beta);

// QB's next bias from the step's prices: beta = beta_sum / batches (the mean over the step's micro-batches
// and ranks, as Marin averages per-device prices); b ← −beta, then centred (b ← b − mean_e b). Overwrites b (E).
void moe_qb_bias(size_t E, const float *beta_sum, float batches, float *b);

// The k-th largest (k = 1..n) of x (n), which it reorders (quickselect).
float moe_kth_largest(float *x, size_t n, size_t k);
#endif
