// Tests for src/kernels/gemm: every micro-kernel path this CPU supports, both precisions, all four
// transpose combinations, accumulate on and off, awkward sizes with padded leading dimensions, threaded
// and single-threaded splits, against gemm_ref; the same through a once-packed op(B) (gemm_packed) over
// chunks of rows, which must also match gemm() exactly and fall back to it when the path or precision
// changed after packing.
//
// Tolerance. For any summation order, with or without fused multiply-adds, the fp32 result of a length-K
// dot product satisfies |c - c_exact| <= gamma_K * sum_k |a_k||b_k|, gamma_K ~= K*u, u = 2^-24 (Higham,
// Accuracy and Stability of Numerical Algorithms, 3.1). gemm_ref is accurate to one rounding (double
// accumulation, one final rounding), so each element must satisfy
//     |c - c_ref| <= (K + 2) * u * (sum_k |a_ik||b_kj| + |c_in|).
// We check the worst ratio to that bound (<= 1) per product: a deterministic bound, not a statistical one.
// bf16: gemm rounds A and B to bf16 while packing, and a product of two bf16 numbers (8-bit significands)
// is exact in fp32, so the bf16 path is fp32 arithmetic on rounded inputs; comparing with gemm_ref on
// bf16_round()ed inputs gives the same bound (vdpbf16ps flushes subnormals; our inputs have none).
// Against the unrounded fp32 product it can be off by the input rounding, 2 * 2^-9 relative per term,
// which one case also checks.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/gemm.h"
#include "support/testlib.h"

static float *fill(rng_state *r, size_t n) {
    float *x = malloc(n * sizeof *x);
    rng_fill_uniform(r, x, n, -1.0f, 1.0f);
    return x;
}

// Stores the logical rows x cols matrix m (row-major, dense) as op-storage: transposed if trans, with
// leading dimension ld >= stored cols. Padding holds NaN so any read outside the matrix shows.
static float *store(const float *m, size_t rows, size_t cols, bool trans, size_t ld) {
    size_t srows = trans ? cols : rows;
    float *s = malloc(srows * ld * sizeof *s);
    for (size_t i = 0; i < srows * ld; i++) s[i] = NAN;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) *(trans ? &s[j * ld + i] : &s[i * ld + j]) = m[i * cols + j];
    return s;
}

typedef struct {
    size_t M, N, K;
} shape;

// Caller-owned panels for gemm_pack_b (64-byte aligned); free() them after the last gemm_packed.
static void *pack(gemm_packed_b *p, bool tb, size_t K, size_t N, const float *b, size_t ldb) {
    const size_t bytes = gemm_packed_b_bytes(K, N);
    void *panels = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    gemm_pack_b(p, panels, bytes, tb, K, N, b, ldb);
    return panels;
}

// The product as gemm() would compute it: by one gemm() call, or (packed) with op(B) packed once and the
// rows of C computed in three chunks by gemm_packed(), as the LM head does.
static void product(bool packed, bool ta, bool tb, size_t M, size_t N, size_t K, const float *a, size_t lda,
                    const float *b, size_t ldb, float *c, size_t ldc, bool acc) {
    if (!packed) {
        gemm(ta, tb, M, N, K, a, lda, b, ldb, c, ldc, acc);
        return;
    }
    gemm_packed_b p;
    void *panels = pack(&p, tb, K, N, b, ldb);
    CHECK(p.panels != NULL);
    const size_t chunk = (M + 2) / 3;
    for (size_t r0 = 0; r0 < M; r0 += chunk) {
        const size_t rows = M - r0 < chunk ? M - r0 : chunk;
        gemm_packed(ta, rows, ta ? a + r0 : a + r0 * lda, lda, &p, c + r0 * ldc, ldc, acc);
    }
    free(panels);
}

// Checks gemm (or, with packed, gemm_packed) against gemm_ref for one shape in the current precision and
// path, over all transposes and accumulate on/off. Returns the worst normalised error seen.
static double check_shape(shape s, rng_state *r, double tol_units, bool packed) {
    const size_t M = s.M, N = s.N, K = s.K;
    const bool bf16 = gemm_get_precision() == GEMM_BF16;
    float *a = fill(r, M * K), *b = fill(r, K * N), *c0 = fill(r, M * N);
    // Reference on the values the kernels see, and the magnitude sum_k |a||b| for the error bound.
    float *ar = malloc(M * K * sizeof *ar), *br = malloc(K * N * sizeof *br);
    float *aa = malloc(M * K * sizeof *aa), *ba = malloc(K * N * sizeof *ba);
    for (size_t i = 0; i < M * K; i++) ar[i] = bf16 ? bf16_round(a[i]) : a[i], aa[i] = fabsf(a[i]);
    for (size_t i = 0; i < K * N; i++) br[i] = bf16 ? bf16_round(b[i]) : b[i], ba[i] = fabsf(b[i]);
    float *ref = malloc(M * N * sizeof *ref), *mag = malloc(M * N * sizeof *mag);
    gemm_ref(false, false, M, N, K, ar, K, br, N, ref, N, false);
    gemm_ref(false, false, M, N, K, aa, K, ba, N, mag, N, false);
    const double u = ldexp(1.0, -24);
    double worst = 0;
    for (int t = 0; t < 8; t++) {
        bool ta = t & 1, tb = t & 2, acc = t & 4;
        size_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 7;
        float *as = store(a, M, K, ta, lda), *bs = store(b, K, N, tb, ldb);
        float *c = malloc(M * ldc * sizeof *c);
        for (size_t i = 0; i < M * ldc; i++) c[i] = -7.0f;
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) c[i * ldc + j] = acc ? c0[i * N + j] : NAN;
        product(packed, ta, tb, M, N, K, as, lda, bs, ldb, c, ldc, acc);
        double w = 0;
        bool pad_ok = true;
        for (size_t i = 0; i < M; i++) {
            for (size_t j = 0; j < N; j++) {
                double want = ref[i * N + j] + (acc ? (double)c0[i * N + j] : 0.0);
                double bound = (K + 2) * u * tol_units * (mag[i * N + j] + (acc ? fabsf(c0[i * N + j]) : 0.0f));
                double e = fabs(c[i * ldc + j] - want) / (bound + 1e-30);
                if (!(e <= w)) w = isnan(e) ? INFINITY : e;
            }
            for (size_t j = N; j < ldc && i + 1 < M; j++) pad_ok &= c[i * ldc + j] == -7.0f;
        }
        if (!CHECK(w <= 1.0) || !CHECK(pad_ok))
            fprintf(stderr, "  path %s %s%s M=%zu N=%zu K=%zu ta=%d tb=%d acc=%d: normalised error %.3g\n",
                    gemm_path_name(), bf16 ? "bf16" : "fp32", packed ? " packed" : "", M, N, K, ta, tb, acc, w);
        if (w > worst) worst = w;
        free(as), free(bs), free(c);
    }
    free(a), free(b), free(c0), free(ar), free(br), free(aa), free(ba), free(ref), free(mag);
    return worst;
}

static const shape g_shapes[] = {
    {1, 1, 1},     {3, 17, 31},   {17, 3, 33},   {31, 33, 1},   {33, 65, 17},   {65, 127, 3},
    {127, 31, 257}, {257, 33, 65}, {13, 257, 127}, {257, 100, 257}, {33, 40, 600}, // K over both KC
    {300, 70, 150},   // threaded, rows split
    {1930, 5, 7},     // M over the transposed-A block
    {5, 4100, 64},                                                                // threaded, columns split, N over NC
    {20, 2100, 100},  // packed: chunks of 7 rows, threaded, columns split
    {13, 700, 250},   // fp32 B block over ROW_ORDER_MAX_B: tiles column by column
    {270, 40, 800},   // dW = dyᵀ·x in small: transposed A over one packing group of panels, K over two blocks
};

static void all_paths_all_shapes(gemm_precision p, bool packed) {
    const char *saved = gemm_path_name();
    gemm_set_precision(p);
    rng_state r;
    rng_seed(&r, 42);
    for (const char *const *path = gemm_supported_paths(); *path; path++) {
        CHECK(gemm_force_path(*path));
        double worst = 0;
        for (size_t i = 0; i < sizeof g_shapes / sizeof g_shapes[0]; i++) {
            double w = check_shape(g_shapes[i], &r, 1.0, packed);
            if (w > worst) worst = w;
        }
        printf("     %-10s %s%s worst normalised error %.3g\n", *path, p == GEMM_BF16 ? "bf16" : "fp32",
               packed ? " packed" : "", worst);
    }
    gemm_set_precision(GEMM_FP32);
    gemm_force_path(saved);
}

static void test_fp32_every_path(void) { all_paths_all_shapes(GEMM_FP32, false); }
static void test_bf16_every_path(void) { all_paths_all_shapes(GEMM_BF16, false); }
static void test_fp32_packed_every_path(void) { all_paths_all_shapes(GEMM_FP32, true); }
static void test_bf16_packed_every_path(void) { all_paths_all_shapes(GEMM_BF16, true); }

// True when gemm_packed over three row chunks gives exactly gemm()'s C: the same kernel on the same
// blocks in the same order, whichever thread packed B.
static bool packed_matches_gemm(const gemm_packed_b *p, bool ta, size_t M, const float *a, size_t lda) {
    float *want = malloc(M * p->N * sizeof *want), *got = malloc(M * p->N * sizeof *got);
    gemm(ta, p->trans_b, M, p->N, p->K, a, lda, p->B, p->ldb, want, p->N, false);
    for (size_t r0 = 0; r0 < M; r0 += M / 3 + 1) {
        const size_t rows = M - r0 < M / 3 + 1 ? M - r0 : M / 3 + 1;
        gemm_packed(ta, rows, ta ? a + r0 : a + r0 * lda, lda, p, got + r0 * p->N, p->N, false);
    }
    bool same = memcmp(want, got, M * p->N * sizeof *got) == 0;
    free(want), free(got);
    return same;
}

// Exact agreement with gemm(), and the fallback: after the precision or the path changes, gemm_packed must
// compute what gemm() now computes (its panels are laid out for the old kernel), not use stale panels.
static void test_packed_exact_and_fallback(void) {
    const size_t M = 301, N = 75, K = 530; // several K blocks, threaded, partial tiles everywhere
    const char *saved = gemm_path_name();
    rng_state r;
    rng_seed(&r, 11);
    float *a = fill(&r, M * K), *b = fill(&r, K * N);
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        gemm_packed_b p;
        void *panels = pack(&p, tb, K, N, b, tb ? K : N);
        CHECK(packed_matches_gemm(&p, ta, M, a, ta ? M : K));
        gemm_set_precision(GEMM_BF16);
        CHECK(packed_matches_gemm(&p, ta, M, a, ta ? M : K));
        gemm_set_precision(GEMM_FP32);
        for (const char *const *path = gemm_supported_paths(); *path; path++) {
            CHECK(gemm_force_path(*path));
            CHECK(packed_matches_gemm(&p, ta, M, a, ta ? M : K));
        }
        CHECK(gemm_force_path(saved));
        free(panels);
    }
    // Nothing to pack: gemm_packed is gemm().
    gemm_packed_b p;
    float c[4] = {9, 9, 9, 9};
    CHECK(gemm_packed_b_bytes(0, 2) == 0);
    gemm_pack_b(&p, NULL, 0, false, 0, 2, b, 2);
    CHECK(p.panels == NULL);
    gemm_packed(false, 2, a, 1, &p, c, 2, false); // K == 0: zeroed
    CHECK(c[0] == 0 && c[3] == 0);
    free(a), free(b);
}

// A product of m < MR rows (the kernels' row-limited tiles, where a path has them) gives exactly the first m
// rows of a product of many rows (whole tiles) and writes no other row of C: per path, both storages of A, overwrite and accumulate,
// several K blocks, partial column tiles.
static void test_few_rows_exact(void) {
    enum { MT = 24, N = 70, K = 530 };
    const char *saved = gemm_path_name();
    rng_state r;
    rng_seed(&r, 5);
    float *a = fill(&r, MT * K), *b = fill(&r, K * N), *c0 = fill(&r, MT * N);
    float *want = malloc(MT * N * sizeof *want), *got = malloc(MT * N * sizeof *got);
    for (const char *const *path = gemm_supported_paths(); *path; path++) {
        CHECK(gemm_force_path(*path));
        for (int t = 0; t < 4; t++) {
            bool ta = t & 1, acc = t & 2;
            memcpy(want, c0, MT * N * sizeof *want);
            gemm(ta, true, MT, N, K, a, ta ? MT : K, b, K, want, N, acc);
            for (size_t m = 1; m <= 13; m++) {
                memcpy(got, c0, MT * N * sizeof *got);
                gemm(ta, true, m, N, K, a, ta ? MT : K, b, K, got, N, acc);
                CHECK(memcmp(got + m * N, c0 + m * N, (MT - m) * N * sizeof *got) == 0);   // rows past m untouched
                if (!CHECK(memcmp(got, want, m * N * sizeof *got) == 0))
                    fprintf(stderr, "  %s: %zu rows (trans_a %d, accumulate %d) differ from a whole tile's\n", *path, m,
                            ta, acc);
            }
        }
    }
    CHECK(gemm_force_path(saved));
    free(a), free(b), free(c0), free(want), free(got);
}

// bf16 against the unrounded fp32 product: each term carries at most 2 * 2^-9 relative error from the
// two roundings, on top of the fp32 summation bound.
static void test_bf16_close_to_fp32(void) {
    const size_t M = 64, N = 96, K = 200;
    rng_state r;
    rng_seed(&r, 7);
    float *a = fill(&r, M * K), *b = fill(&r, K * N);
    float *c = malloc(M * N * sizeof *c), *ref = malloc(M * N * sizeof *ref), *mag = malloc(M * N * sizeof *mag);
    gemm_ref(false, true, M, N, K, a, K, b, K, ref, N, false);
    for (size_t i = 0; i < M * K; i++) a[i] = fabsf(a[i]);
    for (size_t i = 0; i < K * N; i++) b[i] = fabsf(b[i]);
    gemm_ref(false, true, M, N, K, a, K, b, K, mag, N, false);
    rng_seed(&r, 7);
    rng_fill_uniform(&r, a, M * K, -1.0f, 1.0f);
    rng_fill_uniform(&r, b, K * N, -1.0f, 1.0f);
    gemm_set_precision(GEMM_BF16);
    CHECK(gemm_get_precision() == GEMM_BF16);
    gemm(false, true, M, N, K, a, K, b, K, c, N, false);
    gemm_set_precision(GEMM_FP32);
    double worst = 0, mean_rel = 0;
    for (size_t i = 0; i < M * N; i++) {
        double bound = (2 * ldexp(1.0, -9) + (K + 2) * ldexp(1.0, -24)) * mag[i];
        double e = fabs(c[i] - ref[i]) / bound;
        if (e > worst) worst = e;
        mean_rel += fabs(c[i] - ref[i]) / mag[i] / (M * N);
    }
    CHECK(worst <= 1.0);
    // Random rounding errors cancel: the typical error is far below the worst case, but not zero.
    CHECK(mean_rel > 1e-6 && mean_rel < 2e-3);
    free(a), free(b), free(c), free(ref), free(mag);
}

static void test_bf16_round(void) {
    CHECK(bf16_round(1.0f) == 1.0f);
    CHECK(bf16_round(1.0f + 0x1p-8f) == 1.0f);                 // tie, rounds to even (down)
    CHECK(bf16_round(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);   // tie, rounds to even (up)
    CHECK(bf16_round(1.0f + 0x1p-8f + 0x1p-20f) == 1.0f + 0x1p-7f);
    CHECK(bf16_round(-2.5f) == -2.5f);
    CHECK(bf16_round(0x1.fffffep127f) == INFINITY);            // FLT_MAX rounds up out of range
    CHECK(isinf(bf16_round(-INFINITY)) && bf16_round(-INFINITY) < 0);
    CHECK(isnan(bf16_round(NAN)));
    CHECK(bf16_round(0.0f) == 0.0f);
}

static void test_edges_and_dispatch(void) {
    float a[6] = {1, 2, 3, 4, 5, 6}, c[4] = {9, 9, 9, 9};
    gemm(false, false, 2, 2, 0, a, 1, a, 2, c, 2, true); // K == 0, accumulate: C unchanged
    CHECK(c[0] == 9 && c[3] == 9);
    gemm(false, false, 2, 2, 0, a, 1, a, 2, c, 2, false); // K == 0: zeroed
    CHECK(c[0] == 0 && c[3] == 0);
    gemm(false, false, 0, 2, 3, a, 3, a, 2, c, 2, false); // M == 0: nothing touched
    // 2x3 · 3x2 by hand: [1 2 3; 4 5 6] · [1 2; 3 4; 5 6] = [22 28; 49 64].
    gemm(false, false, 2, 2, 3, a, 3, a, 2, c, 2, false);
    CHECK(c[0] == 22 && c[1] == 28 && c[2] == 49 && c[3] == 64);
    CHECK(!gemm_force_path("no-such-path"));
    CHECK(!gemm_force_path(NULL));
    const char *const *paths = gemm_supported_paths();
    CHECK(paths[0] != NULL);
    bool has_generic = false;
    for (const char *const *p = paths; *p; p++) has_generic |= strcmp(*p, "generic") == 0;
    CHECK(has_generic);
    CHECK(gemm_force_path(paths[0]) && strcmp(gemm_path_name(), paths[0]) == 0);
}

// gemm_transpose on every path: whole 16 x 16 blocks and every kind of edge, with padded strides; exact,
// and nothing outside the destination rectangle is written.
static void test_transpose_every_path(void) {
    const char *saved = gemm_path_name();
    const size_t shapes[][2] = {{64, 64}, {16, 16}, {37, 50}, {15, 17}, {1, 33}, {48, 5}, {32, 1}};
    enum { SLD = 70, DLD = 80, SENTINEL = 12345 };
    rng_state r;
    rng_seed(&r, 11);
    float *src = fill(&r, 64 * SLD), *dst = malloc(64 * DLD * sizeof *dst);
    for (const char *const *path = gemm_supported_paths(); *path; path++) {
        CHECK(gemm_force_path(*path));
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            const size_t rows = shapes[i][0], cols = shapes[i][1];
            for (size_t j = 0; j < 64 * DLD; j++) dst[j] = SENTINEL;
            gemm_transpose(src, SLD, dst, DLD, rows, cols);
            size_t wrong = 0;
            for (size_t c = 0; c < 64; c++)
                for (size_t q = 0; q < DLD; q++) {
                    const float want = c < cols && q < rows ? src[q * SLD + c] : SENTINEL;
                    wrong += dst[c * DLD + q] != want;
                }
            if (!CHECK(wrong == 0)) printf("     %s: %zu x %zu: %zu values wrong\n", *path, rows, cols, wrong);
        }
    }
    gemm_force_path(saved);
    free(src), free(dst);
}

// gemm inside a parallel region runs single-threaded per caller, each in the workspace its thread bound.
static void test_inside_parallel_region(void) {
    enum { M = 70, N = 90, K = 110, T = 4 };
    rng_state r;
    rng_seed(&r, 3);
    float *a = fill(&r, T * M * K), *b = fill(&r, K * N), *c = malloc(T * M * N * sizeof *c),
          *ref = malloc(T * M * N * sizeof *ref);
    for (int t = 0; t < T; t++) gemm_ref(false, false, M, N, K, a + t * M * K, K, b, N, ref + t * M * N, N, false);
#pragma omp parallel num_threads(2)
    {
        const gemm_workspace own = {aligned_alloc(64, 64 << 20), 64 << 20};
        CHECK(own.bytes >= gemm_workspace_bytes(M, N, K, 1));
        const gemm_workspace *outer = gemm_bind_workspace(&own);
#pragma omp for
        for (int t = 0; t < T; t++) gemm(false, false, M, N, K, a + t * M * K, K, b, N, c + t * M * N, N, false);
        gemm_bind_workspace(outer);
        free(own.buf);
    }
    CHECK_ARRAYS_CLOSE(c, ref, T * M * N, 1e-4, 1e-4);
    free(a), free(b), free(c), free(ref);
}

// gemm_workspace_bytes and gemm_packed_b_bytes are enough, and gemm stays inside them: every shape, path
// and precision computed in memory of exactly that size (for 1 to 3 threads), followed by guard bytes
// that must come out untouched, gives bit for bit what it gives in the tests' large workspace.
static void test_workspace_exact_size(void) {
    enum { GUARD = 4096, MARK = 0xa5 };
    const char *saved = gemm_path_name();
    const gemm_workspace *outer = gemm_bind_workspace(NULL);
    rng_state r;
    rng_seed(&r, 5);
    for (const char *const *path = gemm_supported_paths(); *path; path++)
        for (int prec = 0; prec < 2; prec++)
            for (size_t i = 0; i < sizeof g_shapes / sizeof g_shapes[0]; i++) {
                CHECK(gemm_force_path(*path));
                gemm_set_precision(prec ? GEMM_BF16 : GEMM_FP32);
                const shape s = g_shapes[i];
                const size_t nt = 1 + i % 3, ws_bytes = gemm_workspace_bytes(s.M, s.N, s.K, nt);
                const size_t pb_bytes = gemm_packed_b_bytes(s.K, s.N);
                unsigned char *ws_mem = aligned_alloc(64, (ws_bytes + GUARD + 63) / 64 * 64);
                unsigned char *pb_mem = aligned_alloc(64, (pb_bytes + GUARD + 63) / 64 * 64);
                memset(ws_mem + ws_bytes, MARK, GUARD);
                memset(pb_mem + pb_bytes, MARK, GUARD);
                const gemm_workspace ws = {ws_mem, ws_bytes};
                gemm_bind_workspace(&ws);
                omp_set_num_threads((int)nt);
                float *a = fill(&r, s.M * s.K), *b = fill(&r, s.K * s.N);
                const size_t bytes = s.M * s.N * sizeof(float);
                float *c = malloc(bytes), *want = malloc(bytes);
                for (int t = 0; t < 4; t++) {
                    const bool ta = t & 1, tb = t & 2;
                    const size_t lda = ta ? s.M : s.K, ldb = tb ? s.K : s.N;
                    gemm_bind_workspace(outer);
                    gemm(ta, tb, s.M, s.N, s.K, a, lda, b, ldb, want, s.N, false);
                    gemm_bind_workspace(&ws);
                    gemm(ta, tb, s.M, s.N, s.K, a, lda, b, ldb, c, s.N, false);
                    CHECK(memcmp(c, want, bytes) == 0);
                    gemm_packed_b p;
                    gemm_pack_b(&p, pb_mem, pb_bytes, tb, s.K, s.N, b, ldb);
                    gemm_packed(ta, s.M, a, lda, &p, c, s.N, false);
                    CHECK(memcmp(c, want, bytes) == 0);
                }
                size_t touched = 0;
                for (size_t g = 0; g < GUARD; g++) touched += (ws_mem[ws_bytes + g] != MARK) + (pb_mem[pb_bytes + g] != MARK);
                if (!CHECK(touched == 0)) printf("  %s %s %zu x %zu x %zu: %zu guard bytes overwritten\n", *path,
                                                 prec ? "bf16" : "fp32", s.M, s.N, s.K, touched);
                free(a), free(b), free(c), free(want), free(ws_mem), free(pb_mem);
            }
    omp_set_num_threads(3);
    gemm_set_precision(GEMM_FP32);
    CHECK(gemm_force_path(saved));
    gemm_bind_workspace(outer);
}

int main(void) {
    // Three threads whatever the machine: the threaded splits (uneven ones too) are always exercised.
    omp_set_num_threads(3);
    testlib_bind_gemm_workspace();
    TEST_RUN(test_bf16_round);
    TEST_RUN(test_edges_and_dispatch);
    TEST_RUN(test_fp32_every_path);
    TEST_RUN(test_bf16_every_path);
    TEST_RUN(test_fp32_packed_every_path);
    TEST_RUN(test_bf16_packed_every_path);
    TEST_RUN(test_packed_exact_and_fallback);
    TEST_RUN(test_few_rows_exact);
    TEST_RUN(test_bf16_close_to_fp32);
    TEST_RUN(test_inside_parallel_region);
    TEST_RUN(test_workspace_exact_size);
    TEST_RUN(test_transpose_every_path);
    return testlib_finish("gemm");
}
