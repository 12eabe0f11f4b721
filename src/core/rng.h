// rng: a small, seedable, serialisable random generator (xoshiro256**) plus uniform and normal draws.
// Its whole state is four uint64s, so checkpoints can store it and resume bit for bit.
#ifndef SEXTANT_CORE_RNG_H
#define SEXTANT_CORE_RNG_H
#include <stdint.h>
#include <stddef.h>

typedef struct { uint64_t s[4]; } rng_state;

void rng_seed(rng_state *r, uint64_t seed);
uint64_t rng_next(rng_state *r);
double rng_uniform(rng_state *r);          // [0, 1)
uint64_t rng_below(rng_state *r, uint64_t n); // [0, n), unbiased
double rng_normal(rng_state *r);           // standard normal (Box-Muller, one value per call)
void rng_fill_normal(rng_state *r, float *x, size_t n, float std);
void rng_fill_uniform(rng_state *r, float *x, size_t n, float lo, float hi);

#endif
