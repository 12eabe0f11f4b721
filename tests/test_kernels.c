// Tests for the elementwise and row kernels: rmsnorm, rope, activations, cross-entropy, embedding, XSA.
// Each reference backward is checked against central finite differences of its reference forward, and each
// fast function against its reference on awkward sizes (1, odd, not multiples of the SIMD width, large
// enough to take the threaded path).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/tensorfile.h"
#include "kernels/activation.h"
#include "kernels/embedding.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/vecmath.h"
#include "kernels/vecmath_avx512.h"
#include "kernels/xent.h"
#include "kernels/xsa.h"
#include "support/testlib.h"

static rng_state rng;

static float *randn(size_t n, float std) {
    float *x = malloc((n ? n : 1) * sizeof(float));
    rng_fill_normal(&rng, x, n, std);
    return x;
}

static float *dup(const float *x, size_t n) {
    float *y = malloc((n ? n : 1) * sizeof(float));
    memcpy(y, x, n * sizeof(float));
    return y;
}

// Finite differences: a scalar loss L(x) of fp32 inputs evaluated in double from fp32 outputs. Step 1e-3 on
// O(1) inputs: truncation ~1e-6, fp32 output rounding ~6e-8·Σ|terms|/1e-3 ≈ 1e-4 on these tiny sizes, hence
// atol 5e-4 + rtol 1e-3 (a wrong formula is off by O(0.1)).
typedef double (*loss_fn)(void *ctx);
static void fd_check(loss_fn f, void *ctx, float *x, const float *grad, size_t n, const char *what) {
    const float eps = 1e-3f;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        float x0 = x[i];
        x[i] = x0 + eps;
        double lp = f(ctx);
        x[i] = x0 - eps;
        double lm = f(ctx);
        x[i] = x0;
        double fd = (lp - lm) / (2.0 * (double)eps);
        if (fabs(fd - grad[i]) > 5e-4 + 1e-3 * fabs(fd) && bad++ < 3)
            fprintf(stderr, "  %s[%zu]: analytic %.7g, finite difference %.7g\n", what, i, grad[i], fd);
    }
    CHECK(bad == 0);
}

static double dot(const float *a, const float *w, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * w[i];
    return s;
}

// ---------------------------------------------------------------------------------------------------------
// rmsnorm

typedef struct { size_t N, C; float *x, *g, *y, *rstd, *w; bool gain; } norm_ctx;
static double norm_loss(void *p) {
    norm_ctx *c = p;
    rmsnorm_forward_ref(c->N, c->C, c->x, c->gain ? c->g : NULL, 1e-5f, c->y, c->rstd);
    return dot(c->y, c->w, c->N * c->C);
}

static void test_rmsnorm_ref_fd(void) {
    for (int gain = 0; gain < 2; gain++) {
        norm_ctx c = {3, 7, randn(21, 1), randn(7, 1), randn(21, 1), randn(3, 1), randn(21, 1), gain};
        norm_loss(&c);
        float *dx = randn(21, 1), *dg = calloc(7, sizeof(float));
        rmsnorm_backward_ref(3, 7, c.x, gain ? c.g : NULL, c.rstd, c.w, dx, gain ? dg : NULL, false);
        fd_check(norm_loss, &c, c.x, dx, 21, "dx");
        if (gain) fd_check(norm_loss, &c, c.g, dg, 7, "dg");
        free(c.x), free(c.g), free(c.y), free(c.rstd), free(c.w), free(dx), free(dg);
    }
}

// fp32 row sums of up to C=1000 squares vs double: relative error ~1e-6; dg sums N rows: atol 1e-4.
static void test_rmsnorm_fast(void) {
    size_t shapes[][2] = {{1, 1}, {3, 17}, {5, 64}, {130, 384}, {257, 33}, {64, 1000}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        size_t N = shapes[si][0], C = shapes[si][1], n = N * C;
        for (int gain = 0; gain < 2; gain++)
            for (int acc = 0; acc < 2; acc++) {
                float *x = randn(n, 2), *g = randn(C, 1), *dy = randn(n, 1), *dx0 = randn(n, 1);
                float *y1 = malloc(n * 4), *y2 = malloc(n * 4), *r1 = malloc(N * 4), *r2 = malloc(N * 4);
                float *dx1 = dup(dx0, n), *dx2 = dup(dx0, n), *dg1 = randn(C, 1), *dg2 = dup(dg1, C);
                if (!acc)  // "overwritten": stale NaNs in dx must not leak through
                    for (size_t i = 0; i < n; i++) dx2[i] = NAN;
                const float *gp = gain ? g : NULL;
                rmsnorm_forward_ref(N, C, x, gp, 1e-6f, y1, r1);
                rmsnorm_forward(N, C, x, gp, 1e-6f, y2, r2);
                CHECK_ARRAYS_CLOSE(y2, y1, n, 1e-5, 1e-6);
                CHECK_ARRAYS_CLOSE(r2, r1, N, 1e-5, 1e-6);
                rmsnorm_backward_ref(N, C, x, gp, r1, dy, dx1, dg1, acc);
                float *work = malloc(rmsnorm_backward_workspace_floats(N, C) * 4);
                rmsnorm_backward(N, C, x, gp, r1, dy, dx2, dg2, acc, work);
                free(work);
                CHECK_ARRAYS_CLOSE(dx2, dx1, n, 1e-4, 1e-5);
                CHECK_ARRAYS_CLOSE(dg2, dg1, C, 1e-4, 1e-4);
                free(x), free(g), free(dy), free(dx0), free(y1), free(y2), free(r1), free(r2);
                free(dx1), free(dx2), free(dg1), free(dg2);
            }
    }
}

// ---------------------------------------------------------------------------------------------------------
// rope

typedef struct { size_t B, T, nh, hd, rot; float *x, *y, *w; } rope_ctx;
static double rope_loss(void *p) {
    rope_ctx *c = p;
    size_t n = c->B * c->T * c->nh * c->hd;
    memcpy(c->y, c->x, n * 4);
    rope_forward_ref(c->B, c->T, c->nh, c->hd, c->rot, 100.0, c->y);
    return dot(c->y, c->w, n);
}

// rope_backward (there is no separate reference) against finite differences of rope_forward_ref.
static void test_rope_backward_fd(void) {
    rope_ctx c = {2, 5, 3, 6, 4, randn(180, 1), randn(180, 1), randn(180, 1)};
    float *ct = malloc(5 * 2 * 4), *st = malloc(5 * 2 * 4), *d = dup(c.w, 180);
    rope_tables(5, 4, 100.0, ct, st);
    rope_backward(2, 5, 3, 6, 4, ct, st, d);
    fd_check(rope_loss, &c, c.x, d, 180, "dx");
    free(c.x), free(c.y), free(c.w), free(ct), free(st), free(d);
}

// Table angles are rounded to fp32 once (|θ| up to T, so cos/sin have abs error ~T·6e-8 in the tables
// vs double in the reference): atol 1e-5 at T <= 70.
static void test_rope_fast(void) {
    // The last shapes are large enough for the rows to be split over the threads; head dimensions 8 and 16
    // rotated whole take the lane-permutation path on AVX-512 (odd head counts at 8: a half vector).
    size_t shapes[][5] = {{1, 1, 1, 2, 2},   {2, 37, 3, 64, 64}, {1, 70, 4, 64, 32}, {3, 9, 2, 10, 6},
                          {2, 37, 3, 8, 8},  {1, 9, 5, 8, 8},    {3, 20, 2, 16, 16}, {2, 11, 3, 8, 4},
                          {5, 60, 4, 64, 48}, {8, 70, 15, 8, 8}, {4, 64, 17, 16, 16}};
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        size_t B = shapes[si][0], T = shapes[si][1], nh = shapes[si][2], hd = shapes[si][3], rot = shapes[si][4];
        size_t n = B * T * nh * hd;
        float *x = randn(n, 1), *y1 = dup(x, n), *y2 = dup(x, n);
        float *ct = malloc(T * rot / 2 * 4), *st = malloc(T * rot / 2 * 4);
        rope_tables(T, rot, 10000.0, ct, st);
        rope_forward_ref(B, T, nh, hd, rot, 10000.0, y1);
        rope_forward(B, T, nh, hd, rot, ct, st, y2);
        CHECK_ARRAYS_CLOSE(y2, y1, n, 1e-5, 1e-5);
        for (size_t i = 0; i < n; i++)  // the channels past rot_dim pass through untouched
            if (i % hd >= rot) CHECK(y2[i] == x[i]);
        rope_backward(B, T, nh, hd, rot, ct, st, y2);  // R(−θ)R(θ) = I
        CHECK_ARRAYS_CLOSE(y2, x, n, 1e-5, 1e-5);
        free(x), free(y1), free(y2), free(ct), free(st);
    }
}

// ---------------------------------------------------------------------------------------------------------
// activations

enum { ACT_RELU2, ACT_GELU, ACT_SWIGLU_G, ACT_SWIGLU_U };
typedef struct { int kind; size_t n; float *h, *u, *a, *w; } act_ctx;
static double act_loss(void *p) {
    act_ctx *c = p;
    if (c->kind == ACT_RELU2) relu2_forward_ref(c->n, c->h, c->a);
    else if (c->kind == ACT_GELU) gelu_forward_ref(c->n, c->h, c->a);
    else swiglu_forward_ref(c->n, c->h, c->u, c->a);
    return dot(c->a, c->w, c->n);
}

static void test_activation_ref_fd(void) {
    size_t n = 41;
    act_ctx c = {0, n, randn(n, 2), randn(n, 1), randn(n, 1), randn(n, 1)};
    for (size_t i = 0; i < n; i++)  // keep ReLU² away from its kink at 0, where differences straddle it
        if (fabsf(c.h[i]) < 0.01f) c.h[i] = 0.5f;
    float *d = malloc(n * 4), *du = malloc(n * 4);
    c.kind = ACT_RELU2;
    relu2_backward_ref(n, c.h, c.w, d);
    fd_check(act_loss, &c, c.h, d, n, "relu2 dh");
    c.kind = ACT_GELU;
    gelu_backward_ref(n, c.h, c.w, d);
    fd_check(act_loss, &c, c.h, d, n, "gelu dh");
    c.kind = ACT_SWIGLU_G;
    swiglu_backward_ref(n, c.h, c.u, c.w, d, du);
    fd_check(act_loss, &c, c.h, d, n, "swiglu dg");
    fd_check(act_loss, &c, c.u, du, n, "swiglu du");
    free(c.h), free(c.u), free(c.a), free(c.w), free(d), free(du);
}

// Elementwise, so the fast versions differ from double only by their own rounding and by the exp/erf
// approximations they use (a few ulp): rtol 1e-5 with atol 1e-6 for values near zero.
static void test_activation_fast(void) {
    size_t sizes[] = {1, 15, 17, 1000, 1 << 17};
    for (size_t si = 0; si < 5; si++) {
        size_t n = sizes[si];
        float *h = randn(n, 3), *u = randn(n, 1), *d = randn(n, 1);
        h[0] = si == 0 ? 0.0f : -40.0f;  // exact zero, and a far tail where exp underflows
        float *a1 = malloc(n * 4), *a2 = malloc(n * 4), *b1 = malloc(n * 4), *b2 = malloc(n * 4);
        relu2_forward_ref(n, h, a1), relu2_forward(n, h, a2);
        CHECK_ARRAYS_CLOSE(a2, a1, n, 1e-5, 1e-6);
        relu2_backward_ref(n, h, d, a1), relu2_backward(n, h, d, a2);
        CHECK_ARRAYS_CLOSE(a2, a1, n, 1e-5, 1e-6);
        gelu_forward_ref(n, h, a1), gelu_forward(n, h, a2);
        CHECK_ARRAYS_CLOSE(a2, a1, n, 1e-5, 1e-6);
        gelu_backward_ref(n, h, d, a1), gelu_backward(n, h, d, a2);
        CHECK_ARRAYS_CLOSE(a2, a1, n, 1e-5, 1e-6);
        swiglu_forward_ref(n, h, u, a1), swiglu_forward(n, h, u, a2);
        CHECK_ARRAYS_CLOSE(a2, a1, n, 1e-5, 1e-6);
        swiglu_backward_ref(n, h, u, d, a1, b1), swiglu_backward(n, h, u, d, a2, b2);
        CHECK_ARRAYS_CLOSE(a2, a1, n, 1e-5, 1e-6);
        CHECK_ARRAYS_CLOSE(b2, b1, n, 1e-5, 1e-6);
        free(h), free(u), free(d), free(a1), free(a2), free(b1), free(b2);
    }
}

// ---------------------------------------------------------------------------------------------------------
// cross-entropy

typedef struct { size_t N, V; float *l; int32_t *t; float cap; xent_extra *x; } xent_ctx;
static double xent_loss(void *p) {
    xent_ctx *c = p;
    double main = xent_forward_backward_ref(c->N, c->V, c->l, c->t, c->x, c->cap, 1.0f, NULL);
    return main + (c->x ? c->x->loss : 0);
}

// The fast kernel with a workspace of its own for `threads` threads.
static double xent_fast(size_t N, size_t V, const float *l, const int32_t *t, xent_extra *x, float cap, float scale,
                        float *d, int threads) {
    size_t n = xent_workspace_floats(N, V, threads);
    float *work = malloc(n * sizeof *work);
    double loss = xent_forward_backward(N, V, l, t, x, cap, scale, d, work, n);
    free(work);
    return loss;
}

// Gradient of loss + extra loss by central differences of the reference: with and without extra targets
// (entries -1, one equal to the row's next-token target, one repeated), with and without the soft-cap.
static void test_xent_ref_fd(void) {
    int32_t t[4] = {2, -1, 0, 8};
    int32_t tx[4 * 3] = {1, 5, -1, 3, 3, 3, 0, 0, 7, -1, 4, 4};
    float w[3] = {0.5f, 0.25f, 0.3f};
    for (int cap = 0; cap < 2; cap++)
        for (int with_x = 0; with_x < 2; with_x++) {
            xent_extra x = {3, tx, w, 0};
            xent_ctx c = {4, 9, randn(36, 3), t, cap ? 4.0f : 0.0f, with_x ? &x : NULL};
            float *d = malloc(36 * 4);
            xent_forward_backward_ref(4, 9, c.l, t, c.x, c.cap, 1.0f, d);
            fd_check(xent_loss, &c, c.l, d, 36, "dlogits");
            for (size_t j = 0; j < 9; j++) CHECK(d[9 + j] == 0);  // ignored row: its extras are not scored
            free(c.l), free(d);
        }
    // Known values: uniform logits over V give loss log V per counted row, and w·log V per counted extra.
    float z[6] = {0};
    int32_t tt[2] = {1, -5}, xt[4] = {2, -1, 0, 1};
    float xw[2] = {0.5f, 2.0f};
    xent_extra x = {2, xt, xw, 0};
    CHECK_CLOSE(xent_forward_backward_ref(2, 3, z, tt, &x, 0, 1, NULL), log(3.0), 1e-12, 0);
    CHECK_CLOSE(x.loss, 0.5 * log(3.0), 1e-7, 0);
    float d[6];
    xent_forward_backward_ref(2, 3, z, tt, &x, 0, 1, d);   // (1 + 0.5)/3 − onehot(1) − 0.5·onehot(2)
    CHECK_CLOSE(d[0], 0.5, 1e-7, 0), CHECK_CLOSE(d[1], -0.5, 1e-7, 0), CHECK_CLOSE(d[2], 0.0, 1e-7, 0);
}

// Loss per row is a log-sum-exp of up to V=8192 terms in fp32 (relative ~1e-6, with the exp
// approximation a few ulp); gradients are probabilities (≤ 1) with the same relative error: atol 1e-7·scale.
// With extra targets (a third of them -1), and on one thread against four (bit for bit: the rows' losses are
// summed in row order).
// The exponential's two forms against double exp: within 3e-7 relative on [-87.3, 88], 0 below (and at
// -inf), exp(88) above. 16 lanes of distinct arguments, so a lane mix-up in the vector form shows.
__attribute__((target("avx512f"))) static void expf_avx512_16(const float *x, float *y) {
    _mm512_storeu_ps(y, vm512_expf(_mm512_loadu_ps(x)));
}

static void check_expf(const float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double want = x[i] < -87.3f ? 0.0 : exp(x[i] > 88.0f ? 88.0 : (double)x[i]);
        CHECK_CLOSE(y[i], want, 3e-7, 0);
    }
}

static void test_vm_expf(void) {
    enum { N = 16 * 800 };
    float x[N], y[N];
    for (size_t i = 0; i < N; i++) x[i] = -92.0f + 185.0f * (float)i / N + (float)(i % 16) * 1e-3f;
    x[0] = -INFINITY, x[1] = -87.31f, x[2] = -87.29f, x[3] = 0.0f, x[4] = 88.0f, x[5] = 95.0f, x[6] = -1e-7f;
    for (size_t i = 0; i < N; i++) y[i] = vm_expf(x[i]);
    check_expf(x, y, N);
    if (!vm512_available()) return;
    memset(y, 0, sizeof y);
    for (size_t i = 0; i < N; i += 16) expf_avx512_16(x + i, y + i);
    check_expf(x, y, N);
}

static void test_xent_fast(void) {
    size_t shapes[][2] = {{1, 1}, {3, 17}, {5, 100}, {37, 8192}, {300, 257}};
    float w[3] = {0.5f, 0.25f, 0.125f};
    for (size_t si = 0; si < 5; si++)
        for (int cap = 0; cap < 2; cap++)
            for (int alias = 0; alias < 2; alias++)
                for (int with_x = 0; with_x < 2; with_x++) {
                    size_t N = shapes[si][0], V = shapes[si][1], n = N * V;
                    float *l = randn(n, 4), *d1 = malloc(n * 4), *d2 = malloc(n * 4), *d3 = malloc(n * 4);
                    l[0] = 60.0f;  // a large logit (and, with the cap of 15, a saturated tanh)
                    int32_t *t = malloc(N * 4), *tx = malloc(N * 3 * 4);
                    for (size_t i = 0; i < N; i++) t[i] = i % 5 == 1 ? -1 : (int32_t)rng_below(&rng, V);
                    for (size_t i = 0; i < 3 * N; i++) tx[i] = i % 3 == 2 ? -1 : (int32_t)rng_below(&rng, V);
                    xent_extra x1 = {3, tx, w, 0}, x2 = x1, x3 = x1;
                    float c = cap ? 15.0f : 0.0f, scale = 0.37f;
                    double L1 = xent_forward_backward_ref(N, V, l, t, with_x ? &x1 : NULL, c, scale, d1);
                    double L2;
                    if (alias) {
                        memcpy(d2, l, n * 4);
                        L2 = xent_fast(N, V, d2, t, with_x ? &x2 : NULL, c, scale, d2, 4);
                    } else {
                        L2 = xent_fast(N, V, l, t, with_x ? &x2 : NULL, c, scale, d2, 4);
                    }
                    CHECK_CLOSE(L2, L1, 1e-5, 1e-6);
                    CHECK_CLOSE(x2.loss, x1.loss, 1e-5, 1e-6);
                    CHECK_ARRAYS_CLOSE(d2, d1, n, 1e-4, 1e-7);
                    CHECK(xent_fast(N, V, l, t, with_x ? &x3 : NULL, c, scale, d3, 1) == L2 && x3.loss == x2.loss);
                    CHECK(memcmp(d3, d2, n * 4) == 0);
                    CHECK_CLOSE(xent_fast(N, V, l, t, NULL, c, scale, NULL, 4), L1, 1e-5, 1e-6);
                    free(l), free(d1), free(d2), free(d3), free(t), free(tx);
                }
}

// Extra targets whose weights are all zero change nothing, bit for bit (the model passes none then, but the
// kernel's plain path must be the extras' special case).
static void test_xent_zero_weights_plain(void) {
    size_t N = 40, V = 300, n = N * V;
    float *l = randn(n, 3), *d1 = malloc(n * 4), *d2 = malloc(n * 4), w[2] = {0, 0};
    int32_t *t = malloc(N * 4), *tx = malloc(2 * N * 4);
    for (size_t i = 0; i < N; i++) t[i] = (int32_t)rng_below(&rng, V);
    for (size_t i = 0; i < 2 * N; i++) tx[i] = (int32_t)rng_below(&rng, V);
    xent_extra x = {2, tx, w, 0};
    CHECK(xent_fast(N, V, l, t, NULL, 0, 0.5f, d1, 2) == xent_fast(N, V, l, t, &x, 0, 0.5f, d2, 2));
    CHECK(memcmp(d1, d2, n * 4) == 0 && x.loss == 0);
    free(l), free(d1), free(d2), free(t), free(tx);
}

// Offsets past the sequence's end and rows with an ignored target get -1; the prefix column maps the target.
static void test_xent_offset_targets(void) {
    const int32_t tok[2 * 4] = {5, 1, 2, 3, /**/ 6, -1, 4, 0};   // B = 2, T = 3
    const int32_t prefix[7] = {-1, 0, 1, -1, 2, 3, 4};
    int32_t out[6 * 3];
    xent_offset_targets(2, 3, tok, 2, prefix, out);
    const int32_t want[6 * 3] = {2, 3, 0, /**/ 3, -1, 1, /**/ -1, -1, -1,
                                 -1, -1, -1, /**/ 0, -1, 2, /**/ -1, -1, -1};
    CHECK(memcmp(out, want, sizeof want) == 0);
    int32_t only_mtp[6];
    xent_offset_targets(2, 3, tok, 1, NULL, only_mtp);
    const int32_t want_mtp[6] = {2, 3, -1, -1, 0, -1};
    CHECK(memcmp(only_mtp, want_mtp, sizeof want_mtp) == 0);
}

// tools/ref/make_xent_fixture.py: next-token loss, weighted extra loss (two offsets and the prefix) and the
// gradient of their sum (means over the batch), from PyTorch in float64; fast and reference at rtol 1e-4.
static void test_xent_fixture(void) {
    tensorfile f;
    if (!CHECK(tf_read("tests/fixtures/xent_extra.sxt", "fixture", &f) == SX_OK)) return;
    size_t B = (size_t)json_integer_value(json_object_get(f.meta, "B"));
    size_t T = (size_t)json_integer_value(json_object_get(f.meta, "T"));
    size_t V = (size_t)json_integer_value(json_object_get(f.meta, "vocab"));
    size_t mtp = (size_t)json_integer_value(json_object_get(f.meta, "mtp")), N = B * T;
    const tf_tensor *tok = tf_find(&f, "tokens"), *prefix = tf_find(&f, "prefix"), *w = tf_find(&f, "weights");
    if (!CHECK(tok && prefix && w && N * V <= 4096)) { tf_free(&f); return; }
    int32_t tx[4096];
    xent_offset_targets(B, T, tok->data, mtp, prefix->data, tx);
    for (int cap = 0; cap < 2; cap++) {
        char name[64];
        const char *tag = cap ? "cap5" : "cap0";
        const tf_tensor *want[4];
        const char *what[4] = {"logits", "loss", "extra_loss", "dlogits"};
        for (int k = 0; k < 4; k++) snprintf(name, sizeof name, "%s.%s", tag, what[k]), want[k] = tf_find(&f, name);
        if (!CHECK(want[0] && want[1] && want[2] && want[3])) continue;
        int32_t targets[4096];
        for (size_t b = 0; b < B; b++) memcpy(targets + b * T, (int32_t *)tok->data + b * (T + 1) + 1, T * 4);
        for (int fast = 0; fast < 2; fast++) {
            float d[4096];
            xent_extra x = {mtp + 1, tx, w->data, 0};
            double loss = fast ? xent_fast(N, V, want[0]->data, targets, &x, cap ? 5.0f : 0, 1.0f / N, d, 3)
                               : xent_forward_backward_ref(N, V, want[0]->data, targets, &x, cap ? 5.0f : 0, 1.0f / N, d);
            CHECK_CLOSE(loss / N, ((float *)want[1]->data)[0], 1e-5, 0);
            CHECK_CLOSE(x.loss / N, ((float *)want[2]->data)[0], 1e-5, 0);
            CHECK_ARRAYS_CLOSE(d, want[3]->data, N * V, 1e-4, 1e-7);
        }
    }
    tf_free(&f);
}

// ---------------------------------------------------------------------------------------------------------
// embedding

static void test_embedding(void) {
    size_t shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {2048, 384, 100}, {333, 65, 2}};
    for (size_t si = 0; si < 4; si++) {
        size_t N = shapes[si][0], C = shapes[si][1], V = shapes[si][2];
        int32_t *tok = malloc(N * 4);
        for (size_t i = 0; i < N; i++) tok[i] = (int32_t)rng_below(&rng, V);
        float *E = randn(V * C, 1), *x = malloc(N * C * 4), *dx = randn(N * C, 1);
        embedding_forward(N, C, tok, E, x);
        bool same = true;
        for (size_t i = 0; i < N; i++) same &= memcmp(x + i * C, E + (size_t)tok[i] * C, C * 4) == 0;
        CHECK(same);
        // Backward accumulates: start from E and compare against a double scatter-add.
        double *want = malloc(V * C * sizeof(double));
        for (size_t i = 0; i < V * C; i++) want[i] = E[i];
        for (size_t i = 0; i < N; i++)
            for (size_t c = 0; c < C; c++) want[(size_t)tok[i] * C + c] += dx[i * C + c];
        float *wf = malloc(V * C * 4);
        for (size_t i = 0; i < V * C; i++) wf[i] = (float)want[i];
        embedding_backward(N, C, tok, dx, E);
        CHECK_ARRAYS_CLOSE(E, wf, V * C, 1e-5, 1e-5);  // fp32 sums of up to ~N/V·... O(1) terms
        free(tok), free(E), free(x), free(dx), free(want), free(wf);
    }
}

// ---------------------------------------------------------------------------------------------------------
// xsa: values strided as in MLA's padded layout (v_head > hd, v_row > Hkv·v_head) and grouped (H > Hkv).

typedef struct { xsa_shape s; float *y, *v, *z, *w; } xsa_ctx;
static double xsa_loss(void *p) {
    xsa_ctx *c = p;
    xsa_forward_ref(&c->s, c->y, c->v, c->z);
    return dot(c->z, c->w, c->s.N * c->s.H * c->s.hd);
}

static size_t xsa_v_floats(const xsa_shape *s) { return s->N * s->v_row; }

static void test_xsa_ref_fd(void) {
    xsa_ctx c = {.s = {3, 4, 2, 5, 2 * 7 + 1, 7}};
    size_t n = c.s.N * c.s.H * c.s.hd, nv = xsa_v_floats(&c.s);
    c.y = randn(n, 1), c.v = randn(nv, 1), c.z = malloc(n * 4), c.w = randn(n, 1);
    xsa_loss(&c);
    // The output is orthogonal to the value it excludes: z·v = s·ε.
    double worst = 0;
    for (size_t r = 0; r < c.s.N * c.s.H; r++) {
        const float *v = c.v + r / c.s.H * c.s.v_row + r % c.s.H / 2 * c.s.v_head;
        worst = fmax(worst, fabs(dot(c.z + r * c.s.hd, v, c.s.hd)) / sqrt(dot(v, v, c.s.hd)));
    }
    CHECK(worst < 1e-5);
    float *dy = randn(n, 1), *dv0 = randn(nv, 1), *dv = dup(dv0, nv);
    xsa_backward_ref(&c.s, c.y, c.v, c.w, dy, dv);   // dv accumulates onto dv0
    for (size_t i = 0; i < nv; i++) dv[i] -= dv0[i];
    fd_check(xsa_loss, &c, c.y, dy, n, "dy");
    fd_check(xsa_loss, &c, c.v, dv, nv, "dv");
    free(c.y), free(c.v), free(c.z), free(c.w), free(dy), free(dv0), free(dv);
}

// fp32 sums of hd products vs double: rtol 1e-4; the last shape takes the threaded path.
static void test_xsa_fast(void) {
    xsa_shape shapes[] = {{1, 1, 1, 1, 1, 1}, {3, 4, 2, 7, 2 * 9 + 3, 9}, {5, 6, 1, 17, 17, 17}, {300, 8, 4, 64, 256, 64}};
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const xsa_shape *s = &shapes[si];
        size_t n = s->N * s->H * s->hd, nv = xsa_v_floats(s);
        float *y = randn(n, 1), *v = randn(nv, 1), *dz = randn(n, 1), *z1 = malloc(n * 4), *z2 = malloc(n * 4);
        float *dy1 = malloc(n * 4), *dy2 = malloc(n * 4), *dv1 = randn(nv, 1), *dv2 = dup(dv1, nv);
        for (size_t i = 0; i < n; i++) z2[i] = dy2[i] = NAN;   // overwritten: stale NaNs must not leak through
        xsa_forward_ref(s, y, v, z1);
        xsa_forward(s, y, v, z2);
        CHECK_ARRAYS_CLOSE(z2, z1, n, 1e-4, 1e-5);
        xsa_backward_ref(s, y, v, dz, dy1, dv1);
        xsa_backward(s, y, v, dz, dy2, NULL);
        xsa_backward(s, y, v, dz, NULL, dv2);
        CHECK_ARRAYS_CLOSE(dy2, dy1, n, 1e-4, 1e-5);
        CHECK_ARRAYS_CLOSE(dv2, dv1, nv, 1e-4, 1e-4);
        free(y), free(v), free(dz), free(z1), free(z2), free(dy1), free(dy2), free(dv1), free(dv2);
    }
}

int main(void) {
    rng_seed(&rng, 1234);
    TEST_RUN(test_rmsnorm_ref_fd);
    TEST_RUN(test_rmsnorm_fast);
    TEST_RUN(test_rope_backward_fd);
    TEST_RUN(test_rope_fast);
    TEST_RUN(test_activation_ref_fd);
    TEST_RUN(test_activation_fast);
    TEST_RUN(test_xent_ref_fd);
    TEST_RUN(test_vm_expf);
    TEST_RUN(test_xent_fast);
    TEST_RUN(test_xent_zero_weights_plain);
    TEST_RUN(test_xent_offset_targets);
    TEST_RUN(test_xent_fixture);
    TEST_RUN(test_embedding);
    TEST_RUN(test_xsa_ref_fd);
    TEST_RUN(test_xsa_fast);
    return testlib_finish("kernels");
}
