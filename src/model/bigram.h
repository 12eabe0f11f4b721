// bigram: the bigram hash embedding with the sign trick (modded-nanogpt #62/#83; ARCH-FEATURES F20), added to
// the token embedding: x_t = emb[x_t] + E_bg[row_t] ⊙ s(pat_t), with E_bg (R, C) the tensor "bigram"
// (zero init, group embed). Per position t of a sequence, with p = x_{t−1}:
//   row_t = ((36313·x_t) XOR (27191·p)) mod (R−1)   products and XOR wrap as int32; floor modulo, in [0, R−2]
//   pat_t = (p XOR x_t) mod S                         S = sign patterns (`bsign<S>`; 0 = no sign trick)
// and at a sequence's first position row R−1 and pat x_t mod S. The pattern's signs are a fixed pseudo-random
// ±1 row: s(pat)_c = −1 when fmix32(pat·0x9E3779B1 + c) is odd (murmur3's finaliser, uint32 arithmetic), so
// bigrams sharing a row read different reflections of it and their updates tend to cancel, not pile up.
// Not responsible for where the previous token comes from (the model's batch layout, the decoder's cache).
#ifndef SEXTANT_MODEL_BIGRAM_H
#define SEXTANT_MODEL_BIGRAM_H
#include <stddef.h>
#include <stdint.h>
#include "core/status.h"
#include "model/config.h"
#include "model/params.h"

// Appends "bigram" (R, C) when the config has the table.
sx_status bigram_declare(const model_config *c, param_table *t);
// tok (N), prev (N): the token before each (−1 at a sequence's first position) -> overwrites row (N), pat (N).
void bigram_index(const model_config *c, size_t N, const int32_t *tok, const int32_t *prev, int32_t *row,
                  int32_t *pat);
// x (N,C) += E[row] ⊙ s(pat) (signs == 0: no signs). E (R,C).
void bigram_forward(size_t N, size_t C, size_t signs, const int32_t *row, const int32_t *pat, const float *E,
                    float *x);
// dE[row] += dx ⊙ s(pat): ACCUMULATES into dE (R,C); dx (N,C).
void bigram_backward(size_t N, size_t C, size_t signs, const int32_t *row, const int32_t *pat, const float *dx,
                     float *dE);
// The specification: per element, the sign computed from the definition; same contracts.
void bigram_forward_ref(size_t N, size_t C, size_t signs, const int32_t *row, const int32_t *pat, const float *E,
                        float *x);
void bigram_backward_ref(size_t N, size_t C, size_t signs, const int32_t *row, const int32_t *pat, const float *dx,
                         float *dE);
#endif
