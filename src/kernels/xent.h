// xent: softmax cross-entropy fused with its backward, on a block of logit rows (the model computes the
// logits of a block of rows with gemm, calls this, and consumes the gradient before the next block, so the
// full (B·T, V) logit matrix never exists). Besides each row's next-token target it scores extra weighted
// targets on the same logits (parameter-free multi-token prediction, the prefix-token auxiliary loss).
// Not responsible for averaging over tokens (the caller picks grad_scale) or for the weights' schedules.
#ifndef SEXTANT_XENT_H
#define SEXTANT_XENT_H
#include <stddef.h>
#include <stdint.h>

// Most extra targets per row.
#define XENT_MAX_EXTRA 8

// Extra targets of each row, scored with per-column weights: row i adds
//   aux_i = Σ_k w[k]·(lse_i − z[i, targets[i·n + k]])   (entries < 0 skipped)
// to its loss. The caller reads `loss` (overwritten by each call: Σ_i aux_i over the rows).
typedef struct {
    size_t n;                  // targets per row, at most XENT_MAX_EXTRA
    const int32_t *targets;    // (N, n)
    const float *w;            // (n)
    double loss;               // out
} xent_extra;

// Floats of workspace xent_forward_backward needs for N rows of V logits on up to `threads` threads. Given
// less room it runs on fewer threads (at least one must fit: asserted); the results do not depend on it.
size_t xent_workspace_floats(size_t N, size_t V, int threads);

// logits (N,V) are the raw head outputs ℓ. With softcap c > 0 the scored logits are z = c·tanh(ℓ/c),
// else z = ℓ. Per row: loss_i = logsumexp(z) − z[target_i]. Returns Σ_i loss_i (double), the next-token
// loss alone; with extra (may be NULL) the rows' aux_i go to extra->loss.
// If dlogits is non-NULL, overwrites it (may alias logits) with grad_scale·∂(loss_i + aux_i)/∂ℓ:
//   ((1 + Σ_k w_k)·softmax(z) − onehot(target) − Σ_k w_k·onehot(t_k)) ⊙ (1 − (z/c)²)  [the last factor
//   only with softcap; the sums over the row's extra targets that are >= 0].
// Targets < 0 are ignored, and a row whose next-token target is < 0 is skipped whole (zero loss, zero
// gradient, its extras not scored). Target values must be < V (asserted).
// work (work_floats, 8-byte aligned) is the caller's scratch: xent_workspace_floats says how much.
double xent_forward_backward(size_t N, size_t V, const float *logits, const int32_t *targets, xent_extra *extra,
                             float softcap, float grad_scale, float *dlogits, float *work, size_t work_floats);
// The specification, in double arithmetic; same contract, no workspace.
double xent_forward_backward_ref(size_t N, size_t V, const float *logits, const int32_t *targets, xent_extra *extra,
                                 float softcap, float grad_scale, float *dlogits);

// The extra targets of a batch tokens (B, T+1) whose row b·T + t has next-token target tokens[b, t+1], into
// out (B·T, n) with n = mtp + (prefix != NULL), overwritten: column k−1 (k = 1..mtp) holds tokens[b, t+1+k]
// (−1 past the sequence's end), and the last column prefix[tokens[b, t+1]] (prefix: a (V) map, −1 = none).
// Rows whose next-token target is < 0 get −1 everywhere.
void xent_offset_targets(size_t B, size_t T, const int32_t *tokens, size_t mtp, const int32_t *prefix, int32_t *out);
#endif
