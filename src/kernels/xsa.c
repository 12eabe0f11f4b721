// xsa: see xsa.h. The *_ref functions are the specification (double sums); the fast ones vectorise each
// head's hd channels and thread over rows (heads of one row share a value, so rows are independent).
#include <math.h>
#include "kernels/xsa.h"

#define XSA_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define XSA_THREADED(s) ((s)->N * (s)->H * (s)->hd >= (1u << 15))

static const float *value_of(const xsa_shape *s, const float *v, size_t t, size_t h) {
    return v + t * s->v_row + h / (s->H / s->Hkv) * s->v_head;
}

void xsa_forward_ref(const xsa_shape *s, const float *y, const float *v, float *z) {
    for (size_t r = 0; r < s->N * s->H; r++) {
        const float *yr = y + r * s->hd, *vr = value_of(s, v, r / s->H, r % s->H);
        double yv = 0, vv = 0;
        for (size_t d = 0; d < s->hd; d++) yv += (double)yr[d] * vr[d], vv += (double)vr[d] * vr[d];
        double sc = yv / (vv + (double)XSA_EPS);
        for (size_t d = 0; d < s->hd; d++) z[r * s->hd + d] = (float)((double)yr[d] - sc * vr[d]);
    }
}

void xsa_backward_ref(const xsa_shape *s, const float *y, const float *v, const float *dz, float *dy, float *dv) {
    for (size_t r = 0; r < s->N * s->H; r++) {
        size_t t = r / s->H, h = r % s->H;
        const float *yr = y + r * s->hd, *vr = value_of(s, v, t, h), *g = dz + r * s->hd;
        double yv = 0, vv = 0, gv = 0;
        for (size_t d = 0; d < s->hd; d++)
            yv += (double)yr[d] * vr[d], vv += (double)vr[d] * vr[d], gv += (double)g[d] * vr[d];
        double n = vv + (double)XSA_EPS, sc = yv / n;
        float *dvr = dv ? dv + (vr - v) : NULL;
        for (size_t d = 0; d < s->hd; d++) {
            if (dy) dy[r * s->hd + d] = (float)((double)g[d] - gv * vr[d] / n);
            if (dvr) dvr[d] = (float)((double)dvr[d] - (sc * g[d] + gv * ((double)yr[d] - 2 * sc * vr[d]) / n));
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Fast path: one row (all its heads) per call, float sums.

XSA_CLONES static void forward_row(const xsa_shape *s, size_t t, const float *y, const float *v, float *z) {
    size_t hd = s->hd;
    for (size_t h = 0; h < s->H; h++) {
        const float *yr = y + (t * s->H + h) * hd, *vr = value_of(s, v, t, h);
        float *zr = z + (t * s->H + h) * hd, yv = 0, vv = 0;
#pragma omp simd reduction(+ : yv, vv)
        for (size_t d = 0; d < hd; d++) yv += yr[d] * vr[d], vv += vr[d] * vr[d];
        float sc = yv / (vv + XSA_EPS);
#pragma omp simd
        for (size_t d = 0; d < hd; d++) zr[d] = yr[d] - sc * vr[d];
    }
}

void xsa_forward(const xsa_shape *s, const float *y, const float *v, float *z) {
#pragma omp parallel for schedule(static) if (XSA_THREADED(s))
    for (size_t t = 0; t < s->N; t++) forward_row(s, t, y, v, z);
}

XSA_CLONES static void backward_row(const xsa_shape *s, size_t t, const float *y, const float *v, const float *dz,
                                    float *dy, float *dv) {
    size_t hd = s->hd;
    for (size_t h = 0; h < s->H; h++) {
        size_t r = t * s->H + h;
        const float *yr = y + r * hd, *vr = value_of(s, v, t, h), *g = dz + r * hd;
        float yv = 0, vv = 0, gv = 0;
#pragma omp simd reduction(+ : yv, vv, gv)
        for (size_t d = 0; d < hd; d++) yv += yr[d] * vr[d], vv += vr[d] * vr[d], gv += g[d] * vr[d];
        float inv = 1.0f / (vv + XSA_EPS), sc = yv * inv, gvn = gv * inv;
        if (dy) {
            float *dyr = dy + r * hd;
#pragma omp simd
            for (size_t d = 0; d < hd; d++) dyr[d] = g[d] - gvn * vr[d];
        }
        if (dv) {
            float *dvr = dv + (vr - v);
#pragma omp simd
            for (size_t d = 0; d < hd; d++) dvr[d] -= sc * g[d] + gvn * (yr[d] - 2 * sc * vr[d]);
        }
    }
}

void xsa_backward(const xsa_shape *s, const float *y, const float *v, const float *dz, float *dy, float *dv) {
#pragma omp parallel for schedule(static) if (XSA_THREADED(s))
    for (size_t t = 0; t < s->N; t++) backward_row(s, t, y, v, dz, dy, dv);
}
