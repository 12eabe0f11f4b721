// adamw: the AdamW update of one tensor with PyTorch semantics, optionally with cautious weight decay, and
// the bare Adam direction that the hyperball (optim/hyperball.h) steps along (docs/MODEL.md "Optimizers").
// Not responsible for: choosing which tensors decay, clipping, or owning state (optimizer.c does that).
#ifndef SEXTANT_ADAMW_H
#define SEXTANT_ADAMW_H
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    double lr;           // effective learning rate of this step (base lr x schedule multiplier)
    double beta1, beta2, eps;
    double weight_decay; // 0 for tensors that are not decayed
    long t;              // step number, >= 1 (bias correction 1 - beta^t)
    bool cautious;       // cautious weight decay: decay only where the step and p have the same sign
} adamw_step_args;

// In place, for i < n:
//   p *= 1 - lr*wd;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2;
//   p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
// Scalar coefficients are formed in double and applied in fp32, as torch.optim.AdamW does.
// Cautious (F32): with u = the subtracted direction m̂/(sqrt(v̂) + eps), the decay factor applies only where
// u·p >= 0 (where the step itself already moves p toward zero), with p the value before this step.
// p, m, v are overwritten; g is read. OpenMP over elements for large n (order-independent).
void adamw_update(float *p, const float *g, float *m, float *v, size_t n, const adamw_step_args *a);

// The moment updates of adamw_update without touching p: m and v overwritten as above, and
// u (n, overwritten) = m̂ / (sqrt(v̂) + eps), the direction AdamH moves along. lr, weight_decay and cautious
// are not used.
void adam_direction(const float *g, float *m, float *v, size_t n, const adamw_step_args *a, float *u);

#endif
