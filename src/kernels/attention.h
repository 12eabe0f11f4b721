// attention: causal scaled-dot-product attention with grouped KV heads, tiled with an online softmax so no
// T×T matrix is ever stored; the backward recomputes probabilities tile by tile (FlashAttention-2 style).
// Not responsible for: projections, RoPE, QK-norm (the model applies those before calling).
#ifndef SEXTANT_KERNELS_ATTENTION_H
#define SEXTANT_KERNELS_ATTENTION_H
#include <stddef.h>

typedef struct {
    size_t B, T;      // batch, sequence length
    size_t H, Hkv;    // query heads, key/value heads (H % Hkv == 0; query head h reads KV head h / (H/Hkv))
    size_t hd;        // head dimension
    float scale;      // logit scale, usually 1/sqrt(hd)
    size_t window;    // 0 = full causal; w > 0: query t sees keys t-w+1..t (the work is cut, not masked)
    float softcap;    // 0 = off; else logits s -> softcap·tanh(s/softcap) (before the mask)
} attn_shape;

// First key query t may see (0, or the window's first).
static inline size_t attn_first_key(const attn_shape *s, size_t t) {
    return (s->window > 0 && t + 1 > s->window) ? t + 1 - s->window : 0;
}

// The fast kernels take their per-thread scratch from the caller, so they allocate nothing and cannot fail:
// work holds work_floats floats (contents on entry do not matter), at least one thread's worth, i.e.
// attention_*_workspace_floats(s, 1); a pass runs on as many threads as OpenMP allows and work holds, so
// size it for the thread count it will run on (omp_get_max_threads()). The size covers either GEMM precision
// and does not depend on s->window.
size_t attention_forward_workspace_floats(const attn_shape *s, size_t threads);
size_t attention_backward_workspace_floats(const attn_shape *s, size_t threads);
// q (B,T,H,hd), k (B,T,Hkv,hd), v (B,T,Hkv,hd), all contiguous.
// Overwrites out (B,T,H,hd) and lse (B,H,T) = log-sum-exp of each query's scaled logits (saved for backward).
void attention_forward(const attn_shape *s, const float *q, const float *k, const float *v, float *out,
                       float *lse, float *work, size_t work_floats);
// Given dout (B,T,H,hd) and the forward's q, k, v, out, lse: overwrites dq (B,T,H,hd), dk, dv (B,T,Hkv,hd).
// dk and dv of a KV head are the sums over the query heads that read it.
void attention_backward(const attn_shape *s, const float *q, const float *k, const float *v, const float *out,
                        const float *lse, const float *dout, float *dq, float *dk, float *dv, float *work,
                        size_t work_floats);

// The specification: direct softmax per query row, double accumulation; same contracts. Their double
// workspace comes from the caller (attention_ref_workspace(s) doubles, for either pass; contents on entry
// do not matter), so the specification itself cannot fail.
size_t attention_ref_workspace(const attn_shape *s);
void attention_forward_ref(const attn_shape *s, const float *q, const float *k, const float *v, float *out,
                           float *lse, double *work);
void attention_backward_ref(const attn_shape *s, const float *q, const float *k, const float *v,
                            const float *out, const float *lse, const float *dout, float *dq, float *dk,
                            float *dv, double *work);
#endif
