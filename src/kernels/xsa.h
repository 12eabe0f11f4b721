// xsa: exclusive self attention (Zhai 2026, arXiv 2603.09078), the cheap algebraic form: each head's attention
// output y loses its component along the value vector v of the same position, so attention carries only
// context (the residual already carries the token itself):
//   z = y − s·v,  s = (y·v)/(v·v + XSA_EPS)
// Query head h uses the value of the KV group it reads, g = h / (H/Hkv). Backward with n = v·v + ε and g = dz:
//   dy = g − (g·v)·v/n;   dv += −[s·g + (g·v)·(y − 2·s·v)/n]   (summed over the heads of a group)
// Not responsible for attention itself or for where values are stored (the caller gives strides).
#ifndef SEXTANT_KERNELS_XSA_H
#define SEXTANT_KERNELS_XSA_H
#include <stddef.h>

#define XSA_EPS 1e-6f

// y, z, dz, dy: (N, H, hd) contiguous. v and dv: row t's KV head g at v + t·v_row + g·v_head (hd floats).
typedef struct {
    size_t N, H, Hkv, hd;
    size_t v_row, v_head;
} xsa_shape;

// Overwrites z (may not alias y).
void xsa_forward(const xsa_shape *s, const float *y, const float *v, float *z);
// dz -> overwrites dy when dy is non-NULL; ACCUMULATES the value gradient into dv when dv is non-NULL (a mixer
// calls it twice: dy before its attention backward, dv after it, since that backward overwrites dv).
void xsa_backward(const xsa_shape *s, const float *y, const float *v, const float *dz, float *dy, float *dv);
// The specification: the formulas above per (row, head), double accumulation; same contracts.
void xsa_forward_ref(const xsa_shape *s, const float *y, const float *v, float *z);
void xsa_backward_ref(const xsa_shape *s, const float *y, const float *v, const float *dz, float *dy, float *dv);
#endif
