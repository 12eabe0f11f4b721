// speculative: speculative decoding of one sequence (Leviathan et al. 2023; Chen et al. 2023). A small draft
// model with the target's vocabulary proposes k tokens one at a time from its sampling distribution q; the
// target scores the tokens it has not seen yet and all k proposals in one decoder_forward (k + 1 positions of
// one sequence), giving its distributions p_1..p_{k+1}. Proposal x_i is kept with probability
// min(1, p_i(x_i) / q_i(x_i)); the first rejected one is replaced by a draw from max(0, p_i − q_i) normalised,
// and when all k are kept one more token is drawn from p_{k+1}. Every emitted token then has exactly the
// target's sampling distribution (sampling.h's filtered one), and at temperature 0 (p and q one-hot) the
// output is the target's greedy output token for token: there the rounds compare argmaxes (spec_verify_greedy)
// and draw no random numbers, as plain greedy decoding. After each round both caches are rolled back to the
// tokens kept (kvcache_truncate), so a rejected proposal leaves no row behind.
// Not responsible for: the sampling filters (infer/sampling), batching many sequences (infer/generate).
#ifndef SEXTANT_INFER_SPECULATIVE_H
#define SEXTANT_INFER_SPECULATIVE_H
#include <stdbool.h>
#include "infer/decode.h"
#include "infer/generate.h"

typedef struct {
    gen_config gen;          // sampler (for both models), max_new, stop tokens, progress: as plain generation
    size_t k;                // draft proposals per round (>= 1)
} spec_config;

typedef struct {
    int32_t *tok;            // generated tokens, the stop token included (owned; spec_result_free)
    size_t len;
    bool stopped, full;      // ended on a stop token / at the smaller decoder's context
    size_t rounds;           // target forwards after the prompt's
    size_t proposed, accepted;   // draft proposals, and those kept
    size_t rejected;         // rounds that ended on a rejected proposal: accepted + rejected proposals were
                             // examined (the rest came after a rejection), so the acceptance rate, the chance
                             // that an examined proposal is kept, is accepted / (accepted + rejected)
} spec_result;

// Generates from prompt (np >= 1 tokens) in a new sequence of each decoder (released before returning).
// target and draft must share the vocabulary. Overwrites *out.
sx_status spec_generate(decoder *target, decoder *draft, const int32_t *prompt, size_t np, const spec_config *c,
                        rng_state *rng, spec_result *out);
void spec_result_free(spec_result *r);

// One round's verification. p (k+1, V): the target's distributions at the k proposals and after the last;
// q (k, V): the draft's at each proposal; x (k): the proposals, each with q > 0. Returns how many proposals
// are kept (n <= k) and sets *next to the token that follows them (the replacement of x[n], or a draw from
// p's last row when all are kept). Draws at most k + 1 uniforms from rng. resid: (V) scratch.
size_t spec_verify(size_t k, size_t V, const double *p, const double *q, const int32_t *x, rng_state *rng,
                   double *resid, int32_t *next);
// spec_verify at temperature 0, where p and q are one-hot on argmaxes, from the target's logits (k+1, V)
// alone: the proposals kept are those the target's argmax agrees with, up to the first it does not, and *next
// is the target's argmax after them. No distributions and no draws (spec_verify's are 2k+1 rows of V doubles).
size_t spec_verify_greedy(size_t k, size_t V, const float *logits, const int32_t *x, int32_t *next);

#endif
