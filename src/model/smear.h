// smear: a one-token look-back on the input embedding (modded-nanogpt #34; ARCH-FEATURES F21). With e_t the
// input embedding of position t (token embedding, plus the bigram hash embedding when on):
//   x_t = e_t + λ·σ(w·e_t[0:12])·e_{t−1}   for every position but a sequence's first (x_0 = e_0)
// λ: tensor "smear_lambda" (1), w: "smear_gate" (12), both zero-initialised (the model starts without the
// look-back and learns how much of the previous token to mix in), group gain.
// Not responsible for where e_{t−1} comes from (the batch in training, the cached tokens in decode).
#ifndef SEXTANT_SMEAR_H
#define SEXTANT_SMEAR_H
#include <stddef.h>
#include "core/status.h"
#include "model/config.h"
#include "model/params.h"

enum { SMEAR_GATE_IN = 12 };

// Appends "smear_gate" (1, 12) and "smear_lambda" (1, 1) when the config has smear.
sx_status smear_declare(const model_config *c, param_table *t);
// One position: x (C) += λ·σ(w·e[0:12])·prev. e may be x itself (the gate is read before x changes).
void smear_row(size_t C, const float *w, float lambda, const float *e, const float *prev, float *x);
// N rows in sequences of T (row i's previous row is i−1 unless i mod T = 0): x (N,C) += the look-back of e
// (N,C), the embeddings before smear (ACCUMULATES into x, which holds e on entry in the model).
void smear_forward(size_t N, size_t T, size_t C, const float *w, float lambda, const float *e, float *x);
// g (N,C): gradient of the smeared x -> OVERWRITES de (N,C), the gradient of e; ACCUMULATES dw (12) and dlambda
// (1). dots: N floats of scratch. de must not alias g or e.
void smear_backward(size_t N, size_t T, size_t C, const float *w, float lambda, const float *e, const float *g,
                    float *de, float *dw, float *dlambda, float *dots);
#endif
