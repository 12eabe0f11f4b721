// gatednorm: GatedNorm (ARCH-FEATURES F4; Qwen's "outlier-driven rescaling", Marin), a low-rank per-channel
// sigmoid gate on the output of an RMSNorm: y = x̂ ⊙ σ(SiLU(x̂·W_downᵀ)·W_upᵀ), rank R. The model applies it
// after every RMSNorm (pre-attention, pre-MLP, final) when the descriptor has gnorm<R>; its 2L+1 pairs of
// tensors sit at the end of the parameter table, site k = 2·layer + (0 attention | 1 MLP), site 2L the final
// norm. Not responsible for the norm itself (kernels/rmsnorm) or where the sites are (model.c, decode.c).
#ifndef SEXTANT_MODEL_GATEDNORM_H
#define SEXTANT_MODEL_GATEDNORM_H
#include <stddef.h>
#include "model/config.h"
#include "model/params.h"

// Appends W_down (R, C) and W_up (C, R) of every site, in site order: "<norm>.gn_down", "<norm>.gn_up" with
// <norm> = l<i>.attn_norm, l<i>.mlp_norm, norm_f. W_down ~ N(0, 1/C); W_up = 0, so every gate starts at 1/2.
// Declares nothing without gnorm<R>.
sx_status gatednorm_declare(const model_config *c, param_table *t);
// Floats one site keeps from forward to backward (σ(c) and a), and of the scratch forward/backward share.
size_t gatednorm_saved_floats(const model_config *c, size_t N);
size_t gatednorm_scratch_floats(const model_config *c, size_t N);

// In place on h (N, C), the norm's output x̂ on entry and y on return:
//   a = x̂·W_downᵀ (N,R); b = SiLU(a); c = b·W_upᵀ (N,C); y = x̂ ⊙ σ(c).
// wd (R,C), wu (C,R). Overwrites saved (gatednorm_saved_floats: σ(c) then a); scratch as sized above.
void gatednorm_forward(size_t N, size_t C, size_t R, const float *wd, const float *wu, float *h, float *saved,
                       float *scratch);
// Backward of the forward above. x̂ is recomputed from the norm's input as its forward made it, x̂ = x·rstd ⊙ gain
// (x (N,C), rstd (N), gain (C)); dh (N,C) holds dy = ∂L/∂y on entry:
//   ds = dy ⊙ x̂; dc = ds ⊙ σ(c)(1 − σ(c)); dW_up += dcᵀ·b; db = dc·W_up; da = db ⊙ SiLU'(a) with
//   SiLU'(a) = σ(a)(1 + a(1 − σ(a))); dW_down += daᵀ·x̂; dx̂ = dy ⊙ σ(c) + da·W_down.
// OVERWRITES dh with dx̂ (what the norm's backward takes); ACCUMULATES dwd (R,C), dwu (C,R).
void gatednorm_backward(size_t N, size_t C, size_t R, const float *x, const float *gain, const float *rstd,
                        const float *wd, const float *wu, float *dwd, float *dwu, float *dh, const float *saved,
                        float *scratch);

#endif
