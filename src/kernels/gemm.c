// gemm: the portable blocking framework behind src/kernels/gemm.h. Packs op(A) and op(B) into zero-padded
// micro-panels (fp32, fp32 rounded to bf16, or bf16 pairs), blocks for the caches (KC deep, MC rows of A
// per L2 block, NC columns of B per L3 block), gives each OpenMP thread its own rectangle of C and hands
// each MR x NR tile to the micro-kernel chosen at run time from CPUID (gemm_ukernel.h).
// Not responsible for: the micro-kernels themselves (gemm_ukernel_<isa>.c), batching (callers loop).
#include "kernels/gemm.h"

#include <assert.h>
#include <omp.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kernels/gemm_ukernel.h"

// Cache blocking (measured on Zen 5: 48 KiB L1, 1 MiB L2 per core). A KC x NR micro-panel of B (48 KiB
// fp32, 32 KiB bf16) is reused from L1/L2 across the MC x KC block of A (360 KiB) held in L2; the KC x NC
// block of B sits in L3. KC is an upper bound: K is cut into equal blocks (see gemm()).
enum { KC_F32 = 384, KC_BF16 = 512, MC = 240, NC = 8192 };
// Stored transposed, A is read along its rows (M-wide): packing MA_TRANS rows of op(A) at once turns
// 1 KiB runs at a large stride into long sequential ones. The extra packed block waits in L3.
enum { MA_TRANS = 1920 };
// Below this many multiply-adds a product runs on the calling thread: the fork costs more than it saves.
#define GEMM_PARALLEL_MIN_MACS ((size_t)1 << 20)
// Largest micro-kernel tile, for the partial-tile scratch.
enum { TILE_MAX = 12 * 32 };

// ---- bf16 rounding ----------------------------------------------------------------------------------

static inline uint16_t bf16_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, quiet_nan = (u >> 16) | 0x0040u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded); // NaN stays NaN
}

// bf16 bits of lo in the low half and of hi in the high half: one (k, k+1) pair as vdpbf16ps reads it.
static inline uint32_t bf16_pair(float lo, float hi) { return bf16_bits(lo) | (uint32_t)bf16_bits(hi) << 16; }

float bf16_round(float x) {
    uint32_t u = (uint32_t)bf16_bits(x) << 16;
    memcpy(&x, &u, sizeof x);
    return x;
}

// ---- precision and dispatch -------------------------------------------------------------------------

static _Atomic int g_precision = GEMM_FP32;

void gemm_set_precision(gemm_precision p) {
    assert(p == GEMM_FP32 || p == GEMM_BF16);
    atomic_store(&g_precision, (int)p);
}
gemm_precision gemm_get_precision(void) { return (gemm_precision)atomic_load(&g_precision); }

typedef struct {
    const char *name;
    const gemm_ukernel *f32;  // fp32 kernel; also runs GEMM_BF16 exactly on bf16-rounded fp32 panels
    const gemm_ukernel *bf16; // native bf16 kernel, or NULL
} gemm_path;

// Best first.
static const gemm_path g_paths[] = {
    {"avx512bf16", &gemm_ukernel_avx512, &gemm_ukernel_bf16},
    {"avx512", &gemm_ukernel_avx512, NULL},
    {"avx2", &gemm_ukernel_avx2, NULL},
    {"generic", &gemm_ukernel_generic, NULL},
};
enum { NPATHS = sizeof g_paths / sizeof g_paths[0] };

static bool path_supported(size_t i) {
    __builtin_cpu_init();
    const char *n = g_paths[i].name;
    if (strcmp(n, "avx512bf16") == 0)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
    if (strcmp(n, "avx512") == 0) return __builtin_cpu_supports("avx512f");
    if (strcmp(n, "avx2") == 0) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return true;
}

static int path_index(const char *name) {
    for (size_t i = 0; i < NPATHS; i++)
        if (name && strcmp(name, g_paths[i].name) == 0 && path_supported(i)) return (int)i;
    return -1;
}

// Index into g_paths; -1 until first use. An unknown or unsupported SEXTANT_GEMM_PATH is ignored.
static _Atomic int g_path = -1;

static const gemm_path *current_path(void) {
    int p = atomic_load(&g_path);
    if (p < 0) {
        p = path_index(getenv("SEXTANT_GEMM_PATH"));
        for (size_t i = 0; p < 0 && i < NPATHS; i++)
            if (path_supported(i)) p = (int)i;
        atomic_store(&g_path, p);
    }
    return &g_paths[p];
}

bool gemm_force_path(const char *name) {
    int p = path_index(name);
    if (p < 0) return false;
    atomic_store(&g_path, p);
    return true;
}

const char *gemm_path_name(void) { return current_path()->name; }

static const char *g_supported[NPATHS + 1];
static pthread_once_t g_supported_once = PTHREAD_ONCE_INIT;

static void list_supported(void) {
    size_t n = 0;
    for (size_t i = 0; i < NPATHS; i++)
        if (path_supported(i)) g_supported[n++] = g_paths[i].name;
    g_supported[n] = NULL;
}

const char *const *gemm_supported_paths(void) {
    pthread_once(&g_supported_once, list_supported);
    return g_supported;
}

// ---- reference --------------------------------------------------------------------------------------

void gemm_ref(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, const float *A, size_t lda,
              const float *B, size_t ldb, float *C, size_t ldc, bool accumulate) {
    for (size_t i = 0; i < M; i++) {
        for (size_t j = 0; j < N; j++) {
            double s = 0.0;
            for (size_t k = 0; k < K; k++) {
                float a = trans_a ? A[k * lda + i] : A[i * lda + k];
                float b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
                s += (double)a * (double)b;
            }
            C[i * ldc + j] = accumulate ? (float)(C[i * ldc + j] + s) : (float)s;
        }
    }
}

// ---- packing ----------------------------------------------------------------------------------------

typedef enum { PACK_F32, PACK_F32_BF16_ROUNDED, PACK_BF16_PAIRS } pack_mode;

// The packing loops are hot for bf16 and for narrow products; cloned per ISA (the file stays portable, the
// loader picks a clone for this CPU) so that the compiler vectorises the conversions with wide registers.
#define PACK_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
// How far ahead the packers prefetch source rows; how many values of a row pack_kmajor takes at a time.
enum { PACK_PREFETCH_ROWS = 8, PACK_GROUP = 256 };

// Converts n contiguous values for the panel (branch-free, so the compiler vectorises it).
static inline void convert_row(void *dst, pack_mode mode, const float *s, size_t n) {
    if (mode == PACK_BF16_PAIRS) {
        uint16_t *d = dst;
        for (size_t i = 0; i < n; i++) d[i] = bf16_bits(s[i]);
    } else if (mode == PACK_F32_BF16_ROUNDED) {
        float *d = dst;
        for (size_t i = 0; i < n; i++) d[i] = bf16_round(s[i]);
    } else {
        float *d = dst; // a loop, not memcpy: rows are often a single panel width (48 or 128 bytes)
        for (size_t i = 0; i < n; i++) d[i] = s[i];
    }
}

// Panels of an operand whose element (k, i) is s[k*ld + i] (A when trans_a, B when !trans_b): n columns
// cut into ceil(n/W) panels W wide, kc of kcp deep, in the k-major layout of gemm_ukernel.h, panel q at
// dst + q*panel_bytes; zero-padded; overwritten. Works on groups of panels about PACK_GROUP values wide:
// each source row is read in runs that long while the group's few panels are written sequentially
// (all panels at once would scatter every row over hundreds of partly written cache lines).
PACK_CLONES static void pack_kmajor(unsigned char *dst, size_t panel_bytes, pack_mode mode, const float *s,
                                    size_t ld, size_t n, size_t W, size_t kc, size_t kcp) {
    const size_t npan = (n + W - 1) / W, step = mode == PACK_BF16_PAIRS ? 2 : 1;
    const size_t group = PACK_GROUP / W > 0 ? PACK_GROUP / W : 1;
    for (size_t q0 = 0; q0 < npan; q0 += group) {
        const size_t q1 = q0 + group < npan ? q0 + group : npan, run = n - q0 * W < group * W ? n - q0 * W : group * W;
        for (size_t k = 0; k < kc; k += step) {
            const float *s0 = s + k * ld, *s1 = k + 1 < kc ? s0 + ld : s0;
            // Rows are short runs far apart (the hardware prefetcher misses them): fetch a few rows ahead.
            for (size_t r = k + PACK_PREFETCH_ROWS; r < k + PACK_PREFETCH_ROWS + step && r < kc; r++)
                for (size_t i = 0; i < run; i += 16) __builtin_prefetch(s + r * ld + q0 * W + i);
            for (size_t q = q0; q < q1; q++) {
                size_t i0 = q * W, w = n - i0 < W ? n - i0 : W;
                if (mode == PACK_BF16_PAIRS) {
                    uint32_t *d = (uint32_t *)(dst + q * panel_bytes) + k / 2 * W; // one (k, k+1) pair each
                    if (k + 1 < kc)
                        for (size_t i = 0; i < w; i++) d[i] = bf16_pair(s0[i0 + i], s1[i0 + i]);
                    else
                        for (size_t i = 0; i < w; i++) d[i] = bf16_pair(s0[i0 + i], 0.0f);
                    memset(d + w, 0, (W - w) * sizeof *d);
                } else {
                    float *d = (float *)(dst + q * panel_bytes) + k * W;
                    convert_row(d, mode, s0 + i0, w);
                    memset(d + w, 0, (W - w) * sizeof *d);
                }
            }
        }
    }
}

// Panels of an operand whose element (k, i) is s[i*ld + k] (B when trans_b), same layout and arguments
// as pack_kmajor. Walks the source column by column: each is contiguous.
PACK_CLONES static void pack_transposed(unsigned char *dst, size_t panel_bytes, pack_mode mode, const float *s,
                                        size_t ld, size_t n, size_t W, size_t kc, size_t kcp) {
    for (size_t q = 0; q * W < n; q++) {
        size_t i0 = q * W, w = n - i0 < W ? n - i0 : W;
        if (mode == PACK_BF16_PAIRS) {
            uint32_t *d = (uint32_t *)(dst + q * panel_bytes); // one (k, k+1) pair each
            if (w < W) memset(d, 0, kcp / 2 * W * sizeof *d);
            for (size_t i = 0; i < w; i++) {
                const float *si = s + (i0 + i) * ld;
                for (size_t k = 0; k + 1 < kc; k += 2) d[k / 2 * W + i] = bf16_pair(si[k], si[k + 1]);
                if (kc % 2) d[kc / 2 * W + i] = bf16_pair(si[kc - 1], 0.0f);
            }
        } else {
            float *d = (float *)(dst + q * panel_bytes);
            if (w < W) memset(d, 0, kcp * W * sizeof *d);
            for (size_t i = 0; i < w; i++) {
                const float *si = s + (i0 + i) * ld;
                if (mode == PACK_F32_BF16_ROUNDED)
                    for (size_t k = 0; k < kc; k++) d[k * W + i] = bf16_round(si[k]);
                else
                    for (size_t k = 0; k < kc; k++) d[k * W + i] = si[k];
            }
        }
    }
}

// Panels of an operand whose element (r, k) is s[r*ld + k] (A when !trans_a): m rows cut into ceil(m/H)
// panels H high, kc of kcp deep, in the row-major layout (a_rows) of gemm_ukernel.h, panel q at
// dst + q*panel_bytes; zero-padded; overwritten.
PACK_CLONES static void pack_rows(unsigned char *dst, size_t panel_bytes, pack_mode mode, const float *s, size_t ld,
                                  size_t m, size_t H, size_t kc, size_t kcp) {
    const size_t es = mode == PACK_BF16_PAIRS ? sizeof(uint16_t) : sizeof(float);
    for (size_t r = 0; r < m; r++) {
        // Each row is one short run (kc values) of a large matrix: fetch a few rows ahead.
        if (r + PACK_PREFETCH_ROWS < m)
            for (size_t k = 0; k < kc; k += 16) __builtin_prefetch(s + (r + PACK_PREFETCH_ROWS) * ld + k);
        unsigned char *d = dst + r / H * panel_bytes + r % H * kcp * es;
        convert_row(d, mode, s + r * ld, kc);
        memset(d + kc * es, 0, (kcp - kc) * es);
    }
    if (m % H) memset(dst + m / H * panel_bytes + m % H * kcp * es, 0, (H - m % H) * kcp * es);
}

// ---- blocked driver ---------------------------------------------------------------------------------

typedef struct {
    bool trans_a, trans_b, accumulate;
    size_t M, N, K, lda, ldb, ldc;
    const float *A, *B;
    float *C;
    const gemm_ukernel *uk;
    pack_mode mode;
    size_t esize, kc_blk, mc_blk;
    size_t ma_blk; // rows of A packed at once: MC, or MA_TRANS (a multiple of MC) when trans_a
    unsigned char *buf; // per thread: a KC x NC block of packed B (bbytes), then an MA x KC block of A
    size_t bbytes, buf_stride;
} gemm_job;

// Writes one tile of the micro-kernel's product, clipped to m x n, through scratch when it is partial.
static void tile(const gemm_job *j, const void *ap, const void *bp, size_t kcp, float *c, size_t m, size_t n,
                 bool acc) {
    const gemm_ukernel *uk = j->uk;
    if (m == uk->mr && n == uk->nr) {
        uk->fn(kcp, ap, !j->trans_a, bp, c, j->ldc, acc);
        return;
    }
    alignas(64) float t[TILE_MAX];
    uk->fn(kcp, ap, !j->trans_a, bp, t, uk->nr, false);
    for (size_t r = 0; r < m; r++)
        for (size_t q = 0; q < n; q++)
            c[r * j->ldc + q] = (acc ? c[r * j->ldc + q] : 0.0f) + t[r * uk->nr + q];
}

// The rows m0..m1 x columns n0..n1 of C, single-threaded, through this thread's packing buffers: bbuf
// (a KC x NC block of B) and abuf (an MA x KC block of A, computed on in MC-row blocks).
static void gemm_block(const gemm_job *j, size_t m0, size_t m1, size_t n0, size_t n1, unsigned char *bbuf,
                       unsigned char *abuf) {
    const gemm_ukernel *uk = j->uk;
    const size_t mr = uk->mr, nr = uk->nr, ks = uk->kstep;
    for (size_t jc = n0; jc < n1; jc += NC) {
        const size_t nc = n1 - jc < NC ? n1 - jc : NC;
        for (size_t pc = 0; pc < j->K; pc += j->kc_blk) {
            const size_t kc = j->K - pc < j->kc_blk ? j->K - pc : j->kc_blk;
            const size_t kcp = (kc + ks - 1) / ks * ks;
            const size_t bpanel = nr * kcp * j->esize, apanel = mr * kcp * j->esize;
            if (j->trans_b)
                pack_transposed(bbuf, bpanel, j->mode, j->B + jc * j->ldb + pc, j->ldb, nc, nr, kc, kcp);
            else
                pack_kmajor(bbuf, bpanel, j->mode, j->B + pc * j->ldb + jc, j->ldb, nc, nr, kc, kcp);
            const bool acc = j->accumulate || pc > 0;
            for (size_t ia = m0; ia < m1; ia += j->ma_blk) {
                const size_t ma = m1 - ia < j->ma_blk ? m1 - ia : j->ma_blk;
                if (j->trans_a)
                    pack_kmajor(abuf, apanel, j->mode, j->A + pc * j->lda + ia, j->lda, ma, mr, kc, kcp);
                else
                    pack_rows(abuf, apanel, j->mode, j->A + ia * j->lda + pc, j->lda, ma, mr, kc, kcp);
                for (size_t ic = 0; ic < ma; ic += j->mc_blk) {
                    const size_t mc = ma - ic < j->mc_blk ? ma - ic : j->mc_blk;
                    const unsigned char *ablock = abuf + ic / mr * apanel;
                    for (size_t jr = 0; jr < nc; jr += nr) {
                        size_t n = nc - jr < nr ? nc - jr : nr;
                        for (size_t ir = 0; ir < mc; ir += mr) {
                            size_t h = mc - ir < mr ? mc - ir : mr;
                            tile(j, ablock + ir / mr * apanel, bbuf + jr / nr * bpanel, kcp,
                                 j->C + (ia + ic + ir) * j->ldc + jc + jr, h, n, acc);
                        }
                    }
                }
            }
        }
    }
}

// Thread tid of nt computes its own rectangle of C with no synchronisation: a range of rows (every thread
// then packs all of B) or of columns (every thread packs all of A), whichever duplicates the smaller
// operand, as long as each thread gets at least one tile.
static void gemm_thread(const gemm_job *j, int tid, int nt) {
    const size_t mr = j->uk->mr, nr = j->uk->nr;
    const size_t mtiles = (j->M + mr - 1) / mr, ntiles = (j->N + nr - 1) / nr;
    const bool split_m = mtiles >= (size_t)nt && (j->N <= j->M || ntiles < (size_t)nt);
    const size_t tiles = split_m ? mtiles : ntiles, t = split_m ? mr : nr, len = split_m ? j->M : j->N;
    size_t lo = tiles * tid / nt * t, hi = tiles * (tid + 1) / nt * t;
    hi = hi < len ? hi : len;
    unsigned char *buf = j->buf + (size_t)tid * j->buf_stride;
    if (lo < hi) {
        if (split_m)
            gemm_block(j, lo, hi, 0, j->N, buf, buf + j->bbytes);
        else
            gemm_block(j, 0, j->M, lo, hi, buf, buf + j->bbytes);
    }
}

// Packing buffers, one per calling thread, kept between calls (products repeat every training step).
static _Thread_local unsigned char *tl_buf;
static _Thread_local size_t tl_cap;

// Buffers are 2 MiB aligned and asked to be backed by huge pages: the packed blocks span megabytes and
// the kernels walk them in 48 KiB panels, which would otherwise cost a TLB miss every few panels.
enum { HUGE_PAGE = 2u << 20 };

static unsigned char *scratch(size_t bytes) {
    if (bytes > tl_cap) {
        free(tl_buf);
        tl_cap = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        tl_buf = aligned_alloc(HUGE_PAGE, tl_cap);
        if (tl_buf)
            madvise(tl_buf, tl_cap, MADV_HUGEPAGE); // advice only: failure just means 4 KiB pages
        else
            tl_cap = 0;
    }
    return tl_buf;
}

// Unpacked loops for when the packing buffers cannot be allocated: slow, but C is still right.
static void gemm_unpacked(const gemm_job *j) {
    bool round = j->mode != PACK_F32;
    for (size_t i = 0; i < j->M; i++) {
        float *c = j->C + i * j->ldc;
        if (!j->accumulate) memset(c, 0, j->N * sizeof *c);
        for (size_t k = 0; k < j->K; k++) {
            float a = j->trans_a ? j->A[k * j->lda + i] : j->A[i * j->lda + k];
            if (round) a = bf16_round(a);
            for (size_t q = 0; q < j->N; q++) {
                float b = j->trans_b ? j->B[q * j->ldb + k] : j->B[k * j->ldb + q];
                c[q] += a * (round ? bf16_round(b) : b);
            }
        }
    }
}

void gemm(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, const float *A, size_t lda,
          const float *B, size_t ldb, float *C, size_t ldc, bool accumulate) {
    if (M == 0 || N == 0) return;
    if (K == 0) {
        if (!accumulate)
            for (size_t i = 0; i < M; i++) memset(C + i * ldc, 0, N * sizeof *C);
        return;
    }
    const gemm_path *path = current_path();
    const bool bf16 = gemm_get_precision() == GEMM_BF16;
    gemm_job j = {.trans_a = trans_a, .trans_b = trans_b, .accumulate = accumulate, .M = M, .N = N, .K = K,
                  .lda = lda, .ldb = ldb, .ldc = ldc, .A = A, .B = B, .C = C};
    j.uk = bf16 && path->bf16 ? path->bf16 : path->f32;
    j.mode = !bf16 ? PACK_F32 : path->bf16 ? PACK_BF16_PAIRS : PACK_F32_BF16_ROUNDED;
    j.esize = j.mode == PACK_BF16_PAIRS ? sizeof(uint16_t) : sizeof(float);
    // Equal K blocks of at most KC: no thin last block, and fewer passes over C than a fixed KC.
    const size_t kc_max = j.mode == PACK_BF16_PAIRS ? KC_BF16 : KC_F32, nkb = (K + kc_max - 1) / kc_max;
    j.kc_blk = ((K + nkb - 1) / nkb + 7) / 8 * 8;
    assert(j.uk->mr * j.uk->nr <= TILE_MAX && MC >= j.uk->mr);
    j.mc_blk = MC / j.uk->mr * j.uk->mr;
    j.ma_blk = trans_a ? MA_TRANS / j.mc_blk * j.mc_blk : j.mc_blk;

    int nt = 1;
    if (!omp_in_parallel() && M * N * K >= GEMM_PARALLEL_MIN_MACS) nt = omp_get_max_threads();
    const size_t kc = K < j.kc_blk ? K : j.kc_blk, kcp = (kc + 1) / 2 * 2;
    const size_t nc = N < NC ? N : NC, mc = M < j.ma_blk ? M : j.ma_blk;
    j.bbytes = ((nc + j.uk->nr - 1) / j.uk->nr * j.uk->nr * kcp * j.esize + 63) / 64 * 64;
    j.buf_stride = j.bbytes + ((mc + j.uk->mr - 1) / j.uk->mr * j.uk->mr * kcp * j.esize + 63) / 64 * 64;
    j.buf = scratch((size_t)nt * j.buf_stride);
    if (!j.buf) {
        gemm_unpacked(&j);
        return;
    }
    if (nt == 1) {
        gemm_thread(&j, 0, 1);
        return;
    }
#pragma omp parallel num_threads(nt)
    gemm_thread(&j, omp_get_thread_num(), omp_get_num_threads());
}
