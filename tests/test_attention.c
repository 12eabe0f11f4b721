// Tests for kernels/attention: the reference backward against central finite differences of the reference
// forward, and the fast forward/backward against the reference on awkward shapes (T=1, odd T, tile
// boundaries, hd not a multiple of 16, windows 1/3/>=T, MHA/GQA/MQA, soft-cap on and off), the bf16-operand
// products against the reference within bf16's error, plus determinism of the fast kernels.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/attention.h"
#include "kernels/gemm.h"
#include "support/testlib.h"

typedef struct {
    attn_shape s;
    float *q, *k, *v, *out, *lse, *w;  // w: random weights of the scalar loss L = Σ out ⊙ w
    double *work;                       // the reference's workspace
} fd_case;

static float *randn(rng_state *r, size_t n, float std) {
    float *x = malloc(n * sizeof(float));
    rng_fill_normal(r, x, n, std);
    return x;
}

// The fast kernels with a workspace for `threads` threads, poisoned first: its contents on entry must not matter.
static void fast_forward(const attn_shape *s, const float *q, const float *k, const float *v, float *out, float *lse,
                         size_t threads) {
    size_t n = attention_forward_workspace_floats(s, threads);
    float *work = malloc(n * sizeof *work);
    memset(work, 0xff, n * sizeof *work);
    attention_forward(s, q, k, v, out, lse, work, n);
    free(work);
}
static void fast_backward(const attn_shape *s, const float *q, const float *k, const float *v, const float *out,
                          const float *lse, const float *dout, float *dq, float *dk, float *dv, size_t threads) {
    size_t n = attention_backward_workspace_floats(s, threads);
    float *work = malloc(n * sizeof *work);
    memset(work, 0xff, n * sizeof *work);
    attention_backward(s, q, k, v, out, lse, dout, dq, dk, dv, work, n);
    free(work);
}
#define ALL_THREADS ((size_t)omp_get_max_threads())

static double fd_loss(fd_case *c) {
    attention_forward_ref(&c->s, c->q, c->k, c->v, c->out, c->lse, c->work);
    size_t n = c->s.B * c->s.T * c->s.H * c->s.hd;
    double L = 0;
    for (size_t i = 0; i < n; i++) L += (double)c->out[i] * c->w[i];
    return L;
}

// Central differences with step 1e-3 on O(1) inputs: truncation error ~1e-6·|L'''|, rounding of the fp32
// outputs ~6e-8·Σ|out·w|/1e-3 ≈ 1e-4 absolute on these tiny sizes, so atol 5e-4 + rtol 1e-3 is a real test
// (a wrong term, e.g. a missing soft-cap factor, changes gradients by O(0.1)).
static void fd_check_array(fd_case *c, float *x, const float *grad, size_t n, const char *what) {
    const float eps = 1e-3f;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        float x0 = x[i];
        x[i] = x0 + eps;
        double lp = fd_loss(c);
        x[i] = x0 - eps;
        double lm = fd_loss(c);
        x[i] = x0;
        double fd = (lp - lm) / (2.0 * (double)eps);
        if (fabs(fd - grad[i]) > 5e-4 + 1e-3 * fabs(fd)) {
            if (bad++ < 3) fprintf(stderr, "  %s[%zu]: analytic %.7g, finite difference %.7g\n", what, i, grad[i], fd);
        }
    }
    CHECK(bad == 0);
}

static void fd_run(size_t B, size_t T, size_t H, size_t Hkv, size_t hd, size_t window, float softcap) {
    rng_state r;
    rng_seed(&r, 42 + T + window);
    fd_case c = {.s = {B, T, H, Hkv, hd, 1.0f / sqrtf((float)hd), window, softcap}};
    size_t nq = B * T * H * hd, nk = B * T * Hkv * hd;
    c.q = randn(&r, nq, 1.5f), c.k = randn(&r, nk, 1.5f), c.v = randn(&r, nk, 1.0f), c.w = randn(&r, nq, 1.0f);
    c.out = malloc(nq * sizeof(float)), c.lse = malloc(B * H * T * sizeof(float));
    float *dq = malloc(nq * sizeof(float)), *dk = malloc(nk * sizeof(float)), *dv = malloc(nk * sizeof(float));
    c.work = malloc(attention_ref_workspace(&c.s) * sizeof(double));
    fd_loss(&c);
    attention_backward_ref(&c.s, c.q, c.k, c.v, c.out, c.lse, c.w, dq, dk, dv, c.work);
    fd_check_array(&c, c.q, dq, nq, "dq");
    fd_check_array(&c, c.k, dk, nk, "dk");
    fd_check_array(&c, c.v, dv, nk, "dv");
    free(c.q), free(c.k), free(c.v), free(c.w), free(c.out), free(c.lse), free(dq), free(dk), free(dv), free(c.work);
}

static void test_ref_backward_matches_finite_differences(void) {
    fd_run(1, 5, 2, 1, 4, 0, 0);     // MQA, full causal
    fd_run(2, 6, 2, 2, 3, 3, 0);     // MHA, window 3
    fd_run(1, 7, 4, 2, 4, 0, 1.5f);  // GQA with a soft-cap that bites (logits ~ ±3)
    fd_run(1, 4, 2, 1, 5, 1, 2.0f);  // window 1: each query sees only itself
}

// The fast kernels accumulate in fp32 with a different summation order (tiles, online rescaling), against
// double in the reference. Inputs are O(1), so outputs are O(1) convex combinations and lse is O(log T):
// errors are a few fp32 ulps times sqrt(terms) — rtol 1e-4 / atol 2e-5 for the forward. The backward sums
// up to T·H/Hkv products into dk/dv with cancellation (dS has zero row sums), so atol 1e-4 / rtol 1e-3;
// a logic error (wrong mask, missing tile, wrong head) produces errors of O(0.1-1).
// ||got − want|| / ||want|| <= tol (bf16 operands: rounding errors are relative to the whole product, so a
// small element can be off by more than an element-wise tolerance allows).
static bool check_rel_norm(const float *got, const float *want, size_t n, double tol, const char *what) {
    double e = 0, w = 0;
    for (size_t i = 0; i < n; i++) e += ((double)got[i] - want[i]) * ((double)got[i] - want[i]), w += (double)want[i] * want[i];
    const double rel = sqrt(e / (w > 0 ? w : 1));
    if (!(rel <= tol)) printf("     %s: relative error %.3g over %.3g\n", what, rel, tol);
    return CHECK(rel <= tol);
}

// norm_tol 0: the fp32 kernels, element by element. Otherwise (bf16 operands) the relative error norm of
// out and lse must stay within norm_tol and that of the gradients within 2.5 x norm_tol.
static void compare_case_tol(size_t B, size_t T, size_t H, size_t Hkv, size_t hd, size_t window, float softcap,
                             double norm_tol) {
    rng_state r;
    rng_seed(&r, 7 * T + 13 * hd + window + H);
    attn_shape s = {B, T, H, Hkv, hd, 1.0f / sqrtf((float)hd), window, softcap};
    size_t nq = B * T * H * hd, nk = B * T * Hkv * hd, nl = B * H * T;
    float *q = randn(&r, nq, 1.5f), *k = randn(&r, nk, 1.5f), *v = randn(&r, nk, 1.0f);
    float *dout = randn(&r, nq, 1.0f);
    float *o1 = malloc(nq * 4), *o2 = malloc(nq * 4), *l1 = malloc(nl * 4), *l2 = malloc(nl * 4);
    float *dq1 = malloc(nq * 4), *dq2 = malloc(nq * 4), *dk1 = malloc(nk * 4), *dk2 = malloc(nk * 4);
    float *dv1 = malloc(nk * 4), *dv2 = malloc(nk * 4);
    // Poison the outputs: the contract says "overwrites", so stale values must not leak through.
    memset(o2, 0x7f, nq * 4), memset(l2, 0x7f, nl * 4);
    memset(dq2, 0x7f, nq * 4), memset(dk2, 0x7f, nk * 4), memset(dv2, 0x7f, nk * 4);
    double *work = malloc(attention_ref_workspace(&s) * sizeof(double));
    attention_forward_ref(&s, q, k, v, o1, l1, work);
    fast_forward(&s, q, k, v, o2, l2, ALL_THREADS);
    attention_backward_ref(&s, q, k, v, o1, l1, dout, dq1, dk1, dv1, work);
    fast_backward(&s, q, k, v, o1, l1, dout, dq2, dk2, dv2, ALL_THREADS);
    bool ok = true;
    if (norm_tol > 0) {
        ok &= check_rel_norm(o2, o1, nq, norm_tol, "out");
        ok &= check_rel_norm(l2, l1, nl, norm_tol, "lse");
        // T = 1: the only key gets all the weight and dq = dk = 0 exactly, so their norm is not a scale.
        ok &= T == 1 || check_rel_norm(dq2, dq1, nq, 2.5 * norm_tol, "dq");
        ok &= T == 1 || check_rel_norm(dk2, dk1, nk, 2.5 * norm_tol, "dk");
        ok &= check_rel_norm(dv2, dv1, nk, 2.5 * norm_tol, "dv");
    } else {
        ok &= CHECK_ARRAYS_CLOSE(o2, o1, nq, 1e-4, 2e-5);
        ok &= CHECK_ARRAYS_CLOSE(l2, l1, nl, 1e-4, 2e-5);
        ok &= CHECK_ARRAYS_CLOSE(dq2, dq1, nq, 1e-3, 1e-4);
        ok &= CHECK_ARRAYS_CLOSE(dk2, dk1, nk, 1e-3, 1e-4);
        ok &= CHECK_ARRAYS_CLOSE(dv2, dv1, nk, 1e-3, 1e-4);
    }
    if (!ok)
        fprintf(stderr, "  in case B=%zu T=%zu H=%zu Hkv=%zu hd=%zu window=%zu softcap=%g\n", B, T, H, Hkv, hd,
                window, softcap);
    free(q), free(k), free(v), free(dout), free(o1), free(o2), free(l1), free(l2);
    free(dq1), free(dq2), free(dk1), free(dk2), free(dv1), free(dv2), free(work);
}

static void compare_case(size_t B, size_t T, size_t H, size_t Hkv, size_t hd, size_t window, float softcap) {
    compare_case_tol(B, T, H, Hkv, hd, window, softcap, 0);
}

static void test_fast_matches_ref_tiny(void) {
    compare_case(1, 1, 1, 1, 8, 0, 0);     // T = 1
    compare_case(1, 1, 4, 2, 8, 3, 5.0f);  // T = 1 with window and cap
    compare_case(2, 37, 4, 2, 8, 0, 0);    // GQA, odd T
    compare_case(1, 37, 4, 1, 8, 3, 0);    // MQA, window 3
    compare_case(1, 37, 4, 4, 8, 1, 0);    // MHA, window 1
    compare_case(2, 37, 4, 2, 8, 37, 0);   // window = T
    compare_case(1, 37, 4, 2, 8, 100, 0);  // window > T
    compare_case(1, 37, 4, 2, 8, 0, 5.0f); // soft-cap
    compare_case(1, 13, 3, 3, 1, 0, 0);    // hd = 1
    compare_case(1, 29, 2, 1, 17, 5, 2.0f);// hd odd and > 16
}

static void test_fast_matches_ref_tiles(void) {
    compare_case(1, 130, 4, 2, 64, 0, 0);      // crosses 64-row tiles, partial last tile
    compare_case(1, 130, 2, 1, 64, 70, 30.0f); // window straddles tiles, cap
    compare_case(1, 200, 2, 2, 24, 65, 0);     // hd not a multiple of 16, window just over a tile
    compare_case(2, 128, 2, 1, 32, 64, 0);     // exact tiles, window = tile
    compare_case(1, 97, 6, 1, 40, 0, 10.0f);   // group of 6 heads on one KV head
    // Tiny-model shapes: hd 8 (8-lane panels), 16 (16-row blocks), 32 (8 x 2 blocks); T = 128, 2 tiles.
    compare_case(2, 128, 8, 8, 8, 0, 0);
    compare_case(1, 128, 8, 4, 16, 0, 0);
    compare_case(1, 128, 4, 2, 32, 50, 0);
    compare_case(1, 77, 2, 1, 12, 0, 3.0f);    // hd 12: an 8-lane panel plus a scalar remainder
}

// Head dimensions 8 and 16 run the fused kernels of attention_small.c where the CPU has AVX-512 (the tiled
// ones elsewhere): 16 queries (forward) or 16 keys (backward) a vector, keys in chunks of 64 (forward),
// queries in chunks of 64 (backward). Partial vectors (T % 16), several chunks, windows that end inside a
// vector or a chunk, groups, and the soft-cap (which stays on the tiled kernels).
static void test_fast_matches_ref_small_heads(void) {
    for (size_t hd = 8; hd <= 16; hd += 8) {
        compare_case(1, 1, 2, 1, hd, 0, 0);       // one query, one key
        compare_case(2, 13, 4, 2, hd, 0, 0);      // one partial vector
        compare_case(1, 200, 4, 1, hd, 0, 0);     // four key chunks, four query chunks, MQA
        compare_case(2, 150, 6, 2, hd, 0, 0);     // groups of 3, last vector of 6
        compare_case(1, 200, 2, 2, hd, 1, 0);     // window 1: each query sees itself
        compare_case(1, 200, 4, 2, hd, 21, 0);    // window ends inside a vector
        compare_case(1, 200, 2, 1, hd, 70, 0);    // window straddles a chunk
        compare_case(1, 77, 2, 2, hd, 300, 0);    // window > T
        compare_case(1, 150, 4, 2, hd, 0, 4.0f);  // soft-cap
    }
}

// bf16 operands (GEMM_BF16 on the avx512bf16 path): each product rounds its two operands (q, k, v, P, dout,
// dS) to bf16, a relative error of up to 2^-9 each, accumulated in fp32. Against the double reference the
// relative error norms measure 0.03-0.4% on out and lse and 0.2-0.8% on the gradients; the bounds are 1%
// and 2.5%, far below what a wrong mask, tile or pairing does (O(10-100%)).
static void test_bf16_products(void) {
    bool has_bf16 = false;
    for (const char *const *p = gemm_supported_paths(); *p; p++) has_bf16 |= strcmp(*p, "avx512bf16") == 0;
    if (!has_bf16) {
        printf("     skipped: this CPU has no AVX-512 BF16\n");
        return;
    }
    const char *saved = gemm_path_name();
    CHECK(gemm_force_path("avx512bf16"));
    gemm_set_precision(GEMM_BF16);
    compare_case_tol(1, 130, 4, 2, 64, 0, 0, 1e-2);     // partial last tile, GQA
    compare_case_tol(2, 37, 4, 2, 8, 3, 5.0f, 1e-2);    // hd 8 (masked vectors), window, cap
    compare_case_tol(1, 97, 6, 1, 40, 70, 10.0f, 1e-2); // hd 40: three vectors, the last masked; odd T
    compare_case_tol(1, 33, 2, 2, 128, 0, 0, 1e-2);     // hd 128: two 64-column panels
    compare_case_tol(1, 1, 1, 1, 16, 0, 0, 1e-2);       // T = 1: one key, paired with zero
    // The window ends the first key tile's queries at 133, inside the third query tile, whose conversions
    // are then reused by the next key tile; hd 24: a masked vector.
    compare_case_tol(1, 200, 4, 2, 24, 70, 0, 1e-2);
    compare_case(1, 29, 2, 1, 17, 5, 2.0f);             // odd hd: fp32 products, fp32 tolerances
    // The bf16 products were really used: the output differs from the fp32 kernels'.
    attn_shape s = {1, 64, 2, 2, 32, 0.125f, 0, 0};
    rng_state r;
    rng_seed(&r, 5);
    size_t n = 64 * 2 * 32;
    float *q = randn(&r, n, 1), *k = randn(&r, n, 1), *v = randn(&r, n, 1), *o16 = malloc(n * 4), *o32 = malloc(n * 4);
    float *lse = malloc(2 * 64 * 4);
    fast_forward(&s, q, k, v, o16, lse, ALL_THREADS);
    gemm_set_precision(GEMM_FP32);
    fast_forward(&s, q, k, v, o32, lse, ALL_THREADS);
    CHECK(memcmp(o16, o32, n * 4) != 0);
    // GEMM_BF16 on a path without vdpbf16ps keeps attention in fp32: the fp32 tolerances hold.
    gemm_set_precision(GEMM_BF16);
    CHECK(gemm_force_path("avx512"));
    compare_case(1, 130, 4, 2, 64, 0, 0);
    gemm_set_precision(GEMM_FP32);
    gemm_force_path(saved);
    free(q), free(k), free(v), free(o16), free(o32), free(lse);
}

// Same inputs, same thread count -> bit-identical outputs (training runs must be reproducible); and the
// result must not depend on the number of threads either, since no reduction crosses threads. In the
// current precision (test_fast_deterministic runs it in both). Runs: all threads; one thread; all threads
// allowed but a workspace for one (the kernels then run on the threads their workspace holds).
static void deterministic_case(size_t hd) {
    rng_state r;
    rng_seed(&r, 99);
    attn_shape s = {2, 150, 4, 2, hd, 0.125f, 0, 0};
    size_t nq = 2 * 150 * 4 * hd, nk = nq / 2, nl = 2 * 4 * 150;
    float *q = randn(&r, nq, 1), *k = randn(&r, nk, 1), *v = randn(&r, nk, 1), *dout = randn(&r, nq, 1);
    float *o[3], *l[3], *dq[3], *dk[3], *dv[3];
    int saved = omp_get_max_threads();
    for (int i = 0; i < 3; i++) {
        o[i] = malloc(nq * 4), l[i] = malloc(nl * 4), dq[i] = malloc(nq * 4), dk[i] = malloc(nk * 4),
        dv[i] = malloc(nk * 4);
        omp_set_num_threads(i == 1 ? 1 : saved);
        size_t threads = i == 0 ? ALL_THREADS : 1;
        fast_forward(&s, q, k, v, o[i], l[i], threads);
        fast_backward(&s, q, k, v, o[i], l[i], dout, dq[i], dk[i], dv[i], threads);
    }
    omp_set_num_threads(saved);
    for (int i = 1; i < 3; i++) {
        CHECK(memcmp(o[0], o[i], nq * 4) == 0);
        CHECK(memcmp(l[0], l[i], nl * 4) == 0);
        CHECK(memcmp(dq[0], dq[i], nq * 4) == 0);
        CHECK(memcmp(dk[0], dk[i], nk * 4) == 0);
        CHECK(memcmp(dv[0], dv[i], nk * 4) == 0);
    }
    for (int i = 0; i < 3; i++) free(o[i]), free(l[i]), free(dq[i]), free(dk[i]), free(dv[i]);
    free(q), free(k), free(v), free(dout);
}

static void test_fast_deterministic(void) {
    for (size_t hd = 8; hd <= 64; hd *= 2) {   // 8 and 16: attention_small.c's kernels where they run
        deterministic_case(hd);
        gemm_set_precision(GEMM_BF16);
        deterministic_case(hd);
        gemm_set_precision(GEMM_FP32);
    }
}

int main(void) {
    TEST_RUN(test_ref_backward_matches_finite_differences);
    TEST_RUN(test_fast_matches_ref_tiny);
    TEST_RUN(test_fast_matches_ref_tiles);
    TEST_RUN(test_fast_matches_ref_small_heads);
    TEST_RUN(test_fast_deterministic);
    TEST_RUN(test_bf16_products);
    return testlib_finish("attention");
}
