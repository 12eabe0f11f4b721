// xent: softmax cross-entropy fused with its backward, on a block of logit rows (the model computes the
// logits of a block of rows with gemm, calls this, and consumes the gradient before the next block, so the
// full (B·T, V) logit matrix never exists).
#ifndef SEXTANT_KERNELS_XENT_H
#define SEXTANT_KERNELS_XENT_H
#include <stddef.h>
#include <stdint.h>

// logits (N,V) are the raw head outputs ℓ. With softcap c > 0 the scored logits are z = c·tanh(ℓ/c),
// else z = ℓ. Per row: loss_i = logsumexp(z) − z[target_i]. Returns Σ_i loss_i (double).
// If dlogits is non-NULL, overwrites it (may alias logits) with grad_scale·∂loss_i/∂ℓ:
//   (softmax(z) − onehot(target)) ⊙ (1 − (z/c)²)  [the last factor only with softcap].
// Targets < 0 are ignored (zero loss, zero gradient). Target values must be < V (asserted).
double xent_forward_backward(size_t N, size_t V, const float *logits, const int32_t *targets, float softcap,
                             float grad_scale, float *dlogits);
double xent_forward_backward_ref(size_t N, size_t V, const float *logits, const int32_t *targets,
                                 float softcap, float grad_scale, float *dlogits);
#endif
