// dcmha: see dcmha.h. Every query row is independent in the forward and in the backward's first pass
// (threaded); the keys' and values' gradients are then gathered per key row from the queries whose window
// holds it (no scattered writes), so the result does not depend on the thread count.
#include <math.h>
#include "kernels/gemm.h"
#include "model/dcmha.h"
#include "model/linear.h"

#define DCMHA_RMS_EPS 1e-6f

sx_status dcmha_declare(const model_config *c, param_table *t) {
    if (!c->dc_window) return SX_OK;
    sx_status s = param_table_add(t, "dc_w1", c->n_head, c->width, INIT_NORMAL, 1.0f / sqrtf((float)c->width),
                                  PGROUP_MATRIX);
    return s ? s : param_table_add(t, "dc_w2", c->n_head, c->width, INIT_ZERO, 0, PGROUP_MATRIX);
}

bool dcmha_at(const model_config *c, size_t layer, float *const *p, float *const *g, size_t first, dcmha_layer *out) {
    if (!c->dc_window || layer + 1 != c->n_layer) return false;
    *out = (dcmha_layer){.w1 = p[first], .w2 = p[first + 1], .dw1 = g ? g[first] : NULL,
                         .dw2 = g ? g[first + 1] : NULL};
    return true;
}

size_t dcmha_scratch_floats(const model_config *c, size_t BT) {
    if (!c->dc_window) return 0;
    size_t H = c->n_head, W = c->dc_window;
    return BT * (2 * H + H * W + W + H * c->head_dim);
}

size_t dcmha_row_scratch_floats(const model_config *c) { return c->dc_window ? (c->n_head + 1) * c->dc_window : 0; }

void dcmha_mix_weights(const model_config *c, size_t N, const dcmha_layer *dc, const float *h, float *u) {
    linear_forward(N, c->width, c->n_head, h, dc->w1, u, false);
    linear_forward(N, c->width, c->n_head, h, dc->w2, u + N * c->n_head, false);
}

// 1/sqrt(mean(u1²) + eps): w1 = u1 times this.
static float rms_inv(size_t H, const float *u1) {
    float ms = 0;
    for (size_t h = 0; h < H; h++) ms += u1[h] * u1[h];
    return 1.0f / sqrtf(ms / (float)H + DCMHA_RMS_EPS);
}

// The per-head window maps P (H, n) and the mixed map a (n).
static void maps(const model_config *c, size_t n, const float *q, const float *const *k, const float *u1, float *P,
                 float *a) {
    size_t H = c->n_head, hd = c->head_dim, group = H / c->n_kv_head;
    float scale = 1.0f / sqrtf((float)hd), r = rms_inv(H, u1);
    for (size_t j = 0; j < n; j++) a[j] = 0;
    for (size_t h = 0; h < H; h++) {
        const float *qh = q + h * hd;
        float *p = P + h * n, mx = -INFINITY;
        for (size_t j = 0; j < n; j++) {
            const float *kj = k[j] + h / group * hd;
            float dot = 0;
            for (size_t d = 0; d < hd; d++) dot += qh[d] * kj[d];
            p[j] = dot * scale;
            mx = p[j] > mx ? p[j] : mx;
        }
        double sum = 0;
        for (size_t j = 0; j < n; j++) sum += (p[j] = expf(p[j] - mx));
        for (size_t j = 0; j < n; j++) {
            p[j] = (float)(p[j] / sum);
            a[j] += u1[h] * r * p[j];
        }
    }
}

void dcmha_row(const model_config *c, size_t n, const float *q, const float *const *k, const float *const *v,
               const float *u1, const float *u2, float *P, float *a, float *o) {
    size_t H = c->n_head, hd = c->head_dim, group = H / c->n_kv_head;
    maps(c, n, q, k, u1, P, a);
    for (size_t g = 0; g < c->n_kv_head; g++)
        for (size_t d = 0; d < hd; d++) {
            float y = 0;   // Σ_s a(s)·v_{s,g}
            for (size_t j = 0; j < n; j++) y += a[j] * v[j][g * hd + d];
            for (size_t h = g * group; h < (g + 1) * group; h++) o[h * hd + d] += u2[h] * y;
        }
}

// Row i's window: n = min(t+1, W) positions ending at i (t = i mod T), as pointers into the KV rows x.
static size_t window(const model_config *c, size_t T, size_t i, const float *x, const float **out) {
    size_t W = c->dc_window, kd = c->n_kv_head * c->head_dim, t = i % T, n = t + 1 < W ? t + 1 : W;
    for (size_t j = 0; j < n; j++) out[j] = x + (i + 1 - n + j) * kd;
    return n;
}

void dcmha_forward(const model_config *c, size_t B, size_t T, const float *q, const float *k, const float *v,
                   const float *u, float *o, float *scratch) {
    size_t BT = B * T, H = c->n_head, W = c->dc_window, qd = H * c->head_dim;
    float *P = scratch + 2 * BT * H, *A = P + BT * H * W;   // the backward's layout, du unused
#pragma omp parallel for schedule(static) if (BT > 16)
    for (size_t i = 0; i < BT; i++) {
        const float *kp[DCMHA_MAX_WINDOW], *vp[DCMHA_MAX_WINDOW];
        size_t n = window(c, T, i, k, kp);
        window(c, T, i, v, vp);
        dcmha_row(c, n, q + i * qd, kp, vp, u + i * H, u + BT * H + i * H, P + i * H * W, A + i * W, o + i * qd);
    }
}

// Backward, per query row (G = dout of the row, y_g = Σ_s a(s)·v_{s,g}, r = 1/sqrt(mean(u1²)+eps), w1 = r·u1):
//   du2_h = G_h·y_{g(h)};  dy_h = w2_h·G_h;  da(s) = Σ_h dy_h·v_{s,g(h)};  dw1_h = Σ_s da(s)·P_h(s)
//   dz_h(s) = w1_h·P_h(s)·(da(s) − Σ_s' P_h(s')·da(s'))  (softmax backward of dP_h = w1_h·da)
//   dq_h += scale·Σ_s dz_h(s)·k_{s,g(h)};  du1 = r·(dw1 − w1·(dw1·w1)/H)
// then per key row s, over the queries t whose window holds it:
//   dk_{s,g} += scale·Σ_t Σ_{h∈g} dz_{t,h}(s)·q_{t,h};  dv_{s,g} += Σ_t a_t(s)·Σ_{h∈g} dy_{t,h}
void dcmha_backward(const model_config *c, size_t B, size_t T, const dcmha_layer *dc, const float *h,
                    const float *q, const float *k, const float *v, const float *u, const float *dout, float *dq,
                    float *dk, float *dv, float *scratch) {
    size_t BT = B * T, H = c->n_head, Hkv = c->n_kv_head, hd = c->head_dim, W = c->dc_window, group = H / Hkv;
    size_t qd = H * hd, kd = Hkv * hd;
    float scale = 1.0f / sqrtf((float)hd);
    float *du1 = scratch, *du2 = du1 + BT * H;                     // (2, BT, H) du
    float *Z = du2 + BT * H, *A = Z + BT * H * W, *DY = A + BT * W;  // (BT,H,W) P then dz; (BT,W) a; (BT,H·hd) dy
    const float *u1 = u, *u2 = u + BT * H;
#pragma omp parallel for schedule(static) if (BT > 16)
    for (size_t i = 0; i < BT; i++) {
        const float *kp[DCMHA_MAX_WINDOW], *vp[DCMHA_MAX_WINDOW];
        float da[DCMHA_MAX_WINDOW];
        size_t n = window(c, T, i, k, kp);
        window(c, T, i, v, vp);
        float *P = Z + i * H * W, *a = A + i * W, *dy = DY + i * qd;
        const float *G = dout + i * qd;
        maps(c, n, q + i * qd, kp, u1 + i * H, P, a);
        for (size_t hh = 0; hh < H; hh++) {
            size_t g = hh / group;
            double s = 0;
            for (size_t d = 0; d < hd; d++) {
                float y = 0;
                for (size_t j = 0; j < n; j++) y += a[j] * vp[j][g * hd + d];
                s += (double)G[hh * hd + d] * y;
            }
            du2[i * H + hh] = (float)s;
        }
        for (size_t x = 0; x < qd; x++) dy[x] = u2[i * H + x / hd] * G[x];
        for (size_t j = 0; j < n; j++) {
            float s = 0;
            for (size_t hh = 0; hh < H; hh++)
                for (size_t d = 0; d < hd; d++) s += dy[hh * hd + d] * vp[j][hh / group * hd + d];
            da[j] = s;
        }
        float r = rms_inv(H, u1 + i * H), *dw1 = du1 + i * H, dot = 0;   // dw1 first, then du1 in place
        for (size_t hh = 0; hh < H; hh++) {
            float *p = P + hh * n, w1 = r * u1[i * H + hh], pda = 0;
            for (size_t j = 0; j < n; j++) pda += p[j] * da[j];
            dw1[hh] = pda;
            dot += pda * w1;
            for (size_t j = 0; j < n; j++) p[j] = scale * w1 * p[j] * (da[j] - pda);   // scale·dz
            float *dqh = dq + i * qd + hh * hd;
            for (size_t j = 0; j < n; j++)
                for (size_t d = 0; d < hd; d++) dqh[d] += p[j] * kp[j][hh / group * hd + d];
        }
        for (size_t hh = 0; hh < H; hh++) dw1[hh] = r * (dw1[hh] - r * u1[i * H + hh] * dot / (float)H);
    }
#pragma omp parallel for schedule(static) if (BT > 16)
    for (size_t s = 0; s < BT; s++) {
        size_t end = s - s % T + T;   // one past the last row of s's sequence
        for (size_t t = s; t < end && t < s + W; t++) {
            size_t tt = t % T, n = tt + 1 < W ? tt + 1 : W, j = s - (t + 1 - n);
            const float *Zt = Z + t * H * W, *dyt = DY + t * qd, *qt = q + t * qd;
            float at = A[t * W + j];
            for (size_t hh = 0; hh < H; hh++) {
                size_t g = hh / group;
                float z = Zt[hh * n + j];
                for (size_t d = 0; d < hd; d++) {
                    dk[s * kd + g * hd + d] += z * qt[hh * hd + d];
                    dv[s * kd + g * hd + d] += at * dyt[hh * hd + d];
                }
            }
        }
    }
    linear_backward(BT, c->width, H, h, dc->w1, du1, dc->dw1, NULL, false);
    linear_backward(BT, c->width, H, h, dc->w2, du2, dc->dw2, NULL, false);
}

void dcmha_backward_input(const model_config *c, size_t N, const dcmha_layer *dc, const float *scratch, float *dh) {
    const float *du = scratch;
    size_t H = c->n_head, C = c->width;
    gemm(false, false, N, C, H, du, H, dc->w1, C, dh, C, true);
    gemm(false, false, N, C, H, du + N * H, H, dc->w2, C, dh, C, true);
}
