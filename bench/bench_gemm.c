// bench_gemm: GFLOP/s of gemm() at the model's shapes and on squares, fp32 and bf16, against OpenBLAS
// sgemm measured in the same run, and as a fraction of the FMA peak measured here with 16 independent zmm
// accumulators per thread. OpenBLAS (Debian libopenblas0-openmp) is loaded with dlopen after clearing
// OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, so it picks its AVX-512 kernels (see /work/shared/BENCH.md) and
// no link flags are needed; without it the baseline columns read n/a.
// Usage: bench_gemm [seconds-per-case [word...]]   (threads: OMP_NUM_THREADS, default all cores)
// With words, only the cases whose name contains one of them run (e.g. `bench_gemm 1 head proj`), and none
// whose name contains a word given as -WORD (`bench_gemm 1 -w32 -w64`: all but the ladder rungs' shapes).
// With OMP_NUM_THREADS=1 every time is the thread's CPU time rather than wall time, so a shared, busy
// machine (time-sliced in scheduler quanta) still gives usable single-core ratios.
#include <dlfcn.h>
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"
#include "core/status.h"
#include "kernels/gemm.h"

static clockid_t g_clock = CLOCK_MONOTONIC;
// Ours packs into these (huge pages, as the model's): the workspace for any product on every thread, and
// panels for the largest op(B) packed once (gemm_pack_b).
static gemm_workspace g_work, g_panels;

static double now(void) {
    struct timespec t;
    clock_gettime(g_clock, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

// ---- peak -------------------------------------------------------------------------------------------

enum { PEAK_ITERS = 4000000, PEAK_TRIES = 5 };

__attribute__((target("avx512f"), noinline)) static float fma_loop(float x) {
    __m512 a[16], m = _mm512_set1_ps(1.0f - 1e-7f), s = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 16; i++) a[i] = _mm512_set1_ps(x + i);
    for (long it = 0; it < PEAK_ITERS; it++)
        for (int i = 0; i < 16; i++) a[i] = _mm512_fmadd_ps(a[i], m, s);
    for (int i = 1; i < 16; i++) a[0] = _mm512_add_ps(a[0], a[i]);
    return _mm512_reduce_add_ps(a[0]);
}

__attribute__((target("avx512f,avx512bf16"), noinline)) static float dpbf16_loop(float x) {
    __m512 a[16];
    __m512bh m = (__m512bh)_mm512_set1_epi32(0x3f803f80); // (1, 1) in bf16
    for (int i = 0; i < 16; i++) a[i] = _mm512_set1_ps(x + i);
    for (long it = 0; it < PEAK_ITERS; it++)
        for (int i = 0; i < 16; i++) a[i] = _mm512_dpbf16_ps(a[i], m, m);
    for (int i = 1; i < 16; i++) a[0] = _mm512_add_ps(a[0], a[i]);
    return _mm512_reduce_add_ps(a[0]);
}

// GFLOP/s of all threads together, each running its own loop: 16 vectors x 16 lanes x 2 flops
// (x2 again for the pair products of vdpbf16ps). Best of a few short tries, so a neighbour's burst on a
// shared machine does not set the peak.
static double measure_peak(bool bf16) {
    double best = 0;
    for (int t = 0; t < PEAK_TRIES; t++) {
        double t0 = now(), sink = 0;
#pragma omp parallel reduction(+ : sink)
        sink += bf16 ? dpbf16_loop((float)omp_get_thread_num()) : fma_loop((float)omp_get_thread_num());
        double dt = now() - t0;
        if (sink == 42.0) puts("");
        double g = omp_get_max_threads() * (double)PEAK_ITERS * 16 * 16 * 2 * (bf16 ? 2 : 1) / dt * 1e-9;
        best = g > best ? g : best;
    }
    return best;
}

// ---- OpenBLAS ---------------------------------------------------------------------------------------

typedef void (*sgemm_fn)(int order, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                         const float *B, int ldb, float beta, float *C, int ldc);
static sgemm_fn g_sgemm;

static void load_openblas(void) {
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("OPENBLAS_L2_SIZE");
    const char *libs[] = {"/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0", "libopenblas.so.0"};
    for (size_t i = 0; i < 2 && !g_sgemm; i++) {
        void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) continue;
        g_sgemm = (sgemm_fn)dlsym(h, "cblas_sgemm");
        const char *(*cfg)(void) = (const char *(*)(void))dlsym(h, "openblas_get_config");
        char *(*core)(void) = (char *(*)(void))dlsym(h, "openblas_get_corename");
        if (g_sgemm) printf("# OpenBLAS: %s (%s, core %s)\n", libs[i], cfg ? cfg() : "?", core ? core() : "?");
    }
    if (!g_sgemm) printf("# OpenBLAS not found: baseline columns n/a\n");
}

// ---- cases ------------------------------------------------------------------------------------------

// A product C (M,N) = op(A)·op(B). With chunk > 0 it runs as the model's fused LM head runs it: the tokens
// (rows of C, or the depth K when trans_a) taken chunk at a time, one call each (C accumulating over the
// chunks of K); ours then packs op(B), the weight, once for all the chunks (gemm_pack_b).
typedef struct {
    const char *name;
    bool ta, tb, acc;
    size_t M, N, K, chunk;
} bench_case;

// One call: who 0 ours fp32, 1 ours bf16, 2 OpenBLAS; ours takes op(B) from wb when given.
static void call(const bench_case *c, int who, size_t M, size_t K, const float *A, const float *B, float *C,
                 bool acc, const gemm_packed_b *wb) {
    size_t lda = c->ta ? c->M : c->K, ldb = c->tb ? c->K : c->N;
    if (who == 2)
        g_sgemm(101, c->ta ? 112 : 111, c->tb ? 112 : 111, (int)M, (int)c->N, (int)K, 1.0f, A, (int)lda, B,
                (int)ldb, acc ? 1.0f : 0.0f, C, (int)c->N);
    else if (wb)
        gemm_packed(c->ta, M, A, lda, wb, C, c->N, acc);
    else
        gemm(c->ta, c->tb, M, c->N, K, A, lda, B, ldb, C, c->N, acc);
}

static void run_once(const bench_case *c, int who, const float *A, const float *B, float *C) {
    const size_t lda = c->ta ? c->M : c->K, ldb = c->tb ? c->K : c->N;
    const size_t tokens = c->ta ? c->K : c->M, step = c->chunk ? c->chunk : tokens;
    gemm_set_precision(who == 1 ? GEMM_BF16 : GEMM_FP32);
    gemm_packed_b wb;
    const bool pack = who != 2 && c->chunk && !c->ta;
    if (pack) gemm_pack_b(&wb, g_panels.buf, g_panels.bytes, c->tb, c->K, c->N, B, ldb);
    for (size_t t0 = 0; t0 < tokens; t0 += step) {
        const size_t n = tokens - t0 < step ? tokens - t0 : step;
        if (c->ta) // chunks of the depth: rows t0.. of both stored operands, C accumulates
            call(c, who, c->M, n, A + t0 * lda, B + t0 * ldb, C, c->acc || t0 > 0, NULL);
        else
            call(c, who, n, c->K, A + t0 * lda, B, C + t0 * c->N, c->acc, pack ? &wb : NULL);
    }
    gemm_set_precision(GEMM_FP32);
}

static double median(double *t, int n) {
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && t[k] < t[k - 1]; k--) {
            double x = t[k];
            t[k] = t[k - 1], t[k - 1] = x;
        }
    return t[n / 2];
}

// Median GFLOP/s of ours fp32 (out[0]), ours bf16 (out[1]) and OpenBLAS (out[2], 0 without it), timed in
// turn within each repetition so that all three see the same machine; about `seconds` in all, 5 to 64
// repetitions after one warm-up round.
enum { MAX_REPS = 64 };
static void measure(const bench_case *c, const float *A, const float *B, float *C, double seconds, double out[3]) {
    const int nwho = g_sgemm ? 3 : 2;
    double t[3][MAX_REPS], round = 0;
    for (int w = 0; w < nwho; w++) {
        double s = now();
        run_once(c, w, A, B, C);
        round += now() - s;
    }
    int n = (int)(seconds / (round + 1e-9));
    n = n < 5 ? 5 : n > MAX_REPS ? MAX_REPS : n;
    for (int i = 0; i < n; i++)
        for (int w = 0; w < nwho; w++) {
            double s = now();
            run_once(c, w, A, B, C);
            t[w][i] = now() - s;
        }
    for (int w = 0; w < 3; w++) out[w] = w < nwho ? 2.0 * c->M * c->N * c->K / median(t[w], n) * 1e-9 : 0.0;
}

// Relative Frobenius distance of who's product (0 ours fp32, 1 ours bf16) from OpenBLAS's, each computed once
// into zeroed outputs; -1 without OpenBLAS.
static double rel_err(const bench_case *c, int who, const float *A, const float *B, float *C, float *Cref) {
    if (!g_sgemm) return -1;
    memset(C, 0, c->M * c->N * sizeof *C);
    memset(Cref, 0, c->M * c->N * sizeof *Cref);
    run_once(c, who, A, B, C);
    run_once(c, 2, A, B, Cref);
    double num = 0, den = 0;
    for (size_t i = 0; i < c->M * c->N; i++) {
        num += ((double)C[i] - Cref[i]) * ((double)C[i] - Cref[i]);
        den += (double)Cref[i] * Cref[i];
    }
    return sqrt(num / den);
}

// Whether a case runs: its name contains none of the words given as -WORD, and one of the others (or no
// others were given).
static bool selected(const char *name, int nwords, char **words) {
    bool asked = false, matched = false;   // some word without '-' given; one of those in the name
    for (int i = 0; i < nwords; i++) {
        bool excludes = words[i][0] == '-', in_name = strstr(name, words[i] + excludes) != NULL;
        if (excludes && in_name) return false;
        asked |= !excludes;
        matched |= !excludes && in_name;
    }
    return !asked || matched;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 0.5;
    load_openblas();
    int nt = omp_get_max_threads();
    if (nt == 1) g_clock = CLOCK_THREAD_CPUTIME_ID;
    double peak = measure_peak(false);
    double peak_bf = __builtin_cpu_supports("avx512bf16") ? measure_peak(true) : 0;
    printf("# threads %d (%s time), gemm path %s, measured peak fp32 %.0f GFLOP/s, bf16 %.0f GFLOP/s\n", nt,
           nt == 1 ? "CPU" : "wall", gemm_path_name(), peak, peak_bf);
    // d6: M = B*T = 2048 tokens, C = 384, F = 4C = 1536, V = 8192.
    const bench_case cases[] = {
        {"x·Wᵀ qkv  2048x1152x384", false, true, false, 2048, 1152, 384, 0},
        {"x·Wᵀ fc   2048x1536x384", false, true, false, 2048, 1536, 384, 0},
        {"x·Wᵀ proj 2048x384x1536", false, true, false, 2048, 384, 1536, 0},
        {"x·Wᵀ head 2048x8192x384", false, true, false, 2048, 8192, 384, 0},
        {"dy·W fc   2048x384x1536", false, false, false, 2048, 384, 1536, 0},
        {"dy·W proj 2048x1536x384", false, false, false, 2048, 1536, 384, 0},
        {"dy·W head 2048x384x8192", false, false, false, 2048, 384, 8192, 0},
        {"dyᵀ·x fc  1536x384x2048", true, false, true, 1536, 384, 2048, 0},
        {"dyᵀ·x proj 384x1536x2048", true, false, true, 384, 1536, 2048, 0},
        {"dyᵀ·x head 8192x384x2048", true, false, true, 8192, 384, 2048, 0},
        // The head as training runs it (model.c: head_rows() = 1024 rows of logits at a time at vocab 8192).
        {"x·Wᵀ head 2048x8192x384 by 1024", false, true, false, 2048, 8192, 384, 1024},
        {"dy·W head 2048x384x8192 by 1024", false, false, false, 2048, 384, 8192, 1024},
        {"dyᵀ·x head 8192x384x2048 by 1024", true, false, true, 8192, 384, 2048, 1024},
        // d2 (C = 128, F = 512): B only 4 panels wide, so fp32 reads A in place (gemm.c, A_IN_PLACE_MAX_PANELS).
        {"d2 dy·W fc   2048x128x512", false, false, false, 2048, 128, 512, 0},
        {"d2 dy·W head 2048x128x8192 by 1024", false, false, false, 2048, 128, 8192, 1024},
        {"d2 dyᵀ·x head 8192x128x2048 by 1024", true, false, true, 8192, 128, 2048, 1024},
        // Ladder rungs (d2-hd16-w32 and -w64 at 8 x 128 tokens, vocab 2048, F = 4C; q, k, v and o are each
        // C x C), which ladder run trains one thread each: run these with OMP_NUM_THREADS=1.
        {"w32 x·Wᵀ head    1024x2048x32", false, true, false, 1024, 2048, 32, 0},
        {"w32 dy·W head    1024x32x2048", false, false, false, 1024, 32, 2048, 0},
        {"w32 dyᵀ·x head   2048x32x1024", true, false, true, 2048, 32, 1024, 0},
        {"w32 x·Wᵀ q       1024x32x32", false, true, false, 1024, 32, 32, 0},
        {"w32 dy·W q       1024x32x32", false, false, false, 1024, 32, 32, 0},
        {"w32 dyᵀ·x q      32x32x1024", true, false, true, 32, 32, 1024, 0},
        {"w32 x·Wᵀ fc      1024x128x32", false, true, false, 1024, 128, 32, 0},
        {"w32 x·Wᵀ proj    1024x32x128", false, true, false, 1024, 32, 128, 0},
        {"w32 dy·W fc      1024x32x128", false, false, false, 1024, 32, 128, 0},
        {"w32 dy·W proj    1024x128x32", false, false, false, 1024, 128, 32, 0},
        {"w32 dyᵀ·x fc     128x32x1024", true, false, true, 128, 32, 1024, 0},
        {"w32 dyᵀ·x proj   32x128x1024", true, false, true, 32, 128, 1024, 0},
        {"w64 x·Wᵀ head    1024x2048x64", false, true, false, 1024, 2048, 64, 0},
        {"w64 dy·W head    1024x64x2048", false, false, false, 1024, 64, 2048, 0},
        {"w64 dyᵀ·x head   2048x64x1024", true, false, true, 2048, 64, 1024, 0},
        {"w64 x·Wᵀ q       1024x64x64", false, true, false, 1024, 64, 64, 0},
        {"w64 dy·W q       1024x64x64", false, false, false, 1024, 64, 64, 0},
        {"w64 dyᵀ·x q      64x64x1024", true, false, true, 64, 64, 1024, 0},
        {"w64 x·Wᵀ fc      1024x256x64", false, true, false, 1024, 256, 64, 0},
        {"w64 x·Wᵀ proj    1024x64x256", false, true, false, 1024, 64, 256, 0},
        {"w64 dy·W fc      1024x64x256", false, false, false, 1024, 64, 256, 0},
        {"w64 dy·W proj    1024x256x64", false, false, false, 1024, 256, 64, 0},
        {"w64 dyᵀ·x fc     256x64x1024", true, false, true, 256, 64, 1024, 0},
        {"w64 dyᵀ·x proj   64x256x1024", true, false, true, 64, 256, 1024, 0},
        {"square 512", false, false, false, 512, 512, 512, 0},
        {"square 1024", false, false, false, 1024, 1024, 1024, 0},
        {"square 2048", false, false, false, 2048, 2048, 2048, 0},
        {"tile 64x64x64", false, true, false, 64, 64, 64, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const size_t b = gemm_packed_b_bytes(cases[i].K, cases[i].N);
        g_panels.bytes = b > g_panels.bytes ? b : g_panels.bytes;
    }
    g_work.bytes = gemm_workspace_bytes(SIZE_MAX, SIZE_MAX, SIZE_MAX, (size_t)nt);
    g_work.buf = sx_alloc_huge(g_work.bytes, "GEMM workspace");
    g_panels.buf = sx_alloc_huge(g_panels.bytes, "packed operand");
    if (!g_work.buf || !g_panels.buf) return 1;   // sx_alloc_huge said what
    gemm_bind_workspace(&g_work);
    printf("# GFLOP/s (medians); ratio = ours fp32 / OpenBLAS; err = relative Frobenius distance from OpenBLAS\n");
    printf("%-32s %9s %9s %9s %7s %7s %7s %9s %9s\n", "case (MxNxK)", "fp32", "bf16", "OpenBLAS", "ratio", "%peak",
           "bf%peak", "err fp32", "err bf16");
    rng_state rng;
    rng_seed(&rng, 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bench_case *c = &cases[i];
        if (!selected(c->name, argc > 2 ? argc - 2 : 0, argv + 2)) continue;
        float *A = malloc(c->M * c->K * sizeof *A), *B = malloc(c->K * c->N * sizeof *B),
              *C = calloc(c->M * c->N, sizeof *C), *Cref = calloc(c->M * c->N, sizeof *Cref);
        rng_fill_uniform(&rng, A, c->M * c->K, -1, 1);
        rng_fill_uniform(&rng, B, c->K * c->N, -1, 1);
        double g[3];
        measure(c, A, B, C, seconds, g);
        double ours = g[0], ours_bf = g[1], blas = g[2];
        printf("%-32s %9.1f %9.1f ", c->name, ours, ours_bf);
        if (g_sgemm)
            printf("%9.1f %6.2fx", blas, ours / blas);
        else
            printf("%9s %7s", "n/a", "n/a");
        printf(" %6.1f%% %6.1f%%", 100 * ours / peak, peak_bf > 0 ? 100 * ours_bf / peak_bf : 0.0);
        printf(" %9.1e %9.1e\n", rel_err(c, 0, A, B, C, Cref), rel_err(c, 1, A, B, C, Cref));
        fflush(stdout);
        free(A), free(B), free(C), free(Cref);
    }
    return 0;
}
