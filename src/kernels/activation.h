// activation: the MLP nonlinearities, elementwise over n values, forward and backward side by side.
// Backward functions overwrite their outputs.
#ifndef SEXTANT_KERNELS_ACTIVATION_H
#define SEXTANT_KERNELS_ACTIVATION_H
#include <stddef.h>

// ReLU²: a = max(h,0)². Backward: dh = da · 2·max(h,0).
void relu2_forward(size_t n, const float *h, float *a);
void relu2_backward(size_t n, const float *h, const float *da, float *dh);
// GELU, exact erf form (PyTorch's nn.GELU default): a = h·Φ(h). Backward: dh = da·(Φ(h) + h·φ(h)).
void gelu_forward(size_t n, const float *h, float *a);
void gelu_backward(size_t n, const float *h, const float *da, float *dh);
// SwiGLU: m = silu(g) ⊙ u, silu(g) = g·σ(g). Backward: du = dm·silu(g); dg = dm·u·σ(g)(1 + g(1−σ(g))).
void swiglu_forward(size_t n, const float *g, const float *u, float *m);
void swiglu_backward(size_t n, const float *g, const float *u, const float *dm, float *dg, float *du);

void relu2_forward_ref(size_t n, const float *h, float *a);
void relu2_backward_ref(size_t n, const float *h, const float *da, float *dh);
void gelu_forward_ref(size_t n, const float *h, float *a);
void gelu_backward_ref(size_t n, const float *h, const float *da, float *dh);
void swiglu_forward_ref(size_t n, const float *g, const float *u, float *m);
void swiglu_backward_ref(size_t n, const float *g, const float *u, const float *dm, float *dg, float *du);
#endif
