// gemm: the portable blocking framework behind src/kernels/gemm.h. Packs op(A) and op(B) into zero-padded
// micro-panels (fp32, fp32 rounded to bf16, or bf16 pairs), blocks for the caches (KC deep, MC rows of A
// per L2 block, NC columns of B per L3 block), gives each OpenMP thread its own rectangle of C and hands
// each MR x NR tile to the micro-kernel chosen at run time from CPUID (gemm_ukernel.h). op(B) can also be
// packed once for several products (gemm_pack_b, gemm_packed). All packing goes into memory the caller
// owns (gemm_workspace, gemm_pack_b's panels): nothing here allocates.
// Not responsible for: the micro-kernels and ISA packing helpers themselves (gemm_ukernel_<isa>.c,
// gemm_pack_<isa>.c), batching (callers loop).
#include "kernels/gemm.h"

#include <omp.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "kernels/gemm_ukernel.h"

// Cache blocking (measured on Zen 5: 48 KiB L1, 1 MiB L2 per core). A KC x NR micro-panel of B (48 KiB
// fp32, 32 KiB bf16) is reused from L1/L2 across the MC x KC block of A (396 KiB) held in L2; the KC x NC
// block of B sits in L3. KC and MC are upper bounds: K and each thread's rows are cut into equal blocks
// (job_setup, gemm_block); MC takes a 256-row chunk of the head in one block, so B is streamed once.
enum { KC_F32 = 384, KC_BF16 = 512, MC = 264, NC = 8192 };
// Stored transposed, A is read along its rows (M-wide): packing MA_TRANS rows of op(A) at once turns
// 1 KiB runs at a large stride into long sequential ones. The extra packed block waits in L3.
enum { MA_TRANS = 1920 };
// Largest packed B block (bytes) walked a row of C tiles at a time (see macro_block): the d6 weight
// gradients' 384 columns, with room in L2 for the A and C streams.
#define ROW_ORDER_MAX_B ((size_t)640 << 10)
// Below this many multiply-adds a product runs on the calling thread: the fork costs more than it saves.
#define GEMM_PARALLEL_MIN_MACS ((size_t)1 << 20)
// Most panels (NR columns each) in a block of B against which fp32 A is read in place instead of packed
// (gemm_block). Measured with the 12 x 32 AVX-512 kernel: 2 made the demo ladder's rungs (widths 32, 64)
// 13-14% faster, 4 then d2 (width 128) another 7%; 8 made no measurable difference at d4 (width 256).
enum { A_IN_PLACE_MAX_PANELS = 4 };
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
    SX_CHECK(p == GEMM_FP32 || p == GEMM_BF16, "gemm_set_precision takes GEMM_FP32 or GEMM_BF16");
    atomic_store(&g_precision, (int)p);
}
gemm_precision gemm_get_precision(void) { return (gemm_precision)atomic_load(&g_precision); }

typedef struct {
    const char *name;
    const gemm_ukernel *f32;  // fp32 kernel; also runs GEMM_BF16 exactly on bf16-rounded fp32 panels
    const gemm_ukernel *bf16; // native bf16 kernel, or NULL
    const gemm_transpose_fn *transpose; // transposer of blocks up to 16 x 16 (packing, gemm_transpose), or NULL
    const gemm_bf16_convert *bf16_convert; // vector conversions for the bf16 kernel's panels, or NULL (scalar)
} gemm_path;

// Best first.
static const gemm_path g_paths[] = {
    {"avx512bf16", &gemm_ukernel_avx512, &gemm_ukernel_bf16, &gemm_transpose16_avx512, &gemm_bf16_convert_avx512},
    {"avx512", &gemm_ukernel_avx512, NULL, &gemm_transpose16_avx512, NULL},
    {"avx2", &gemm_ukernel_avx2, NULL, NULL, NULL},
    {"generic", &gemm_ukernel_generic, NULL, NULL, NULL},
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

void gemm_transpose(const void *src, size_t sld, void *dst, size_t dld, size_t rows, size_t cols) {
    const gemm_path *path = current_path();
    const unsigned char *s = src;
    unsigned char *d = dst;
    if (path->transpose) { // blocks of 16 x 16, smaller at the edges
        for (size_t r = 0; r < rows; r += 16)
            for (size_t c = 0; c < cols; c += 16)
                (*path->transpose)(s + (r * sld + c) * 4, sld, d + (c * dld + r) * 4, dld,
                                   rows - r < 16 ? rows - r : 16, cols - c < 16 ? cols - c : 16);
        return;
    }
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) memcpy(d + (c * dld + r) * 4, s + (r * sld + c) * 4, 4);
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

// One k row (fp32 modes) or (k, k+1) row pair (PACK_BF16_PAIRS; s1 NULL pairs with zeros) of a k-major
// panel: w <= W values from s0 (and s1), zero-padded to W. Inlined with a constant W where the caller knows
// it, so that a full row compiles to a few whole-vector moves instead of a loop with a remainder.
static inline __attribute__((always_inline)) void kmajor_row(unsigned char *dst, pack_mode mode, const float *s0,
                                                             const float *s1, size_t w, size_t W) {
    if (mode == PACK_BF16_PAIRS) {
        uint32_t *d = (uint32_t *)dst;
        if (w == W && s1) {
            for (size_t i = 0; i < W; i++) d[i] = bf16_pair(s0[i], s1[i]);
            return;
        }
        for (size_t i = 0; i < w; i++) d[i] = bf16_pair(s0[i], s1 ? s1[i] : 0.0f);
        for (size_t i = w; i < W; i++) d[i] = 0;
    } else if (w == W && mode == PACK_F32) {
        // A few whole-vector moves where W is a constant (pack_kmajor); the vectoriser would pick 16-wide
        // vectors and copy a 12-wide row (the A panels of dW = dyᵀ·x) a value at a time.
        memcpy(dst, s0, W * sizeof(float));
    } else if (w == W) {
        convert_row(dst, mode, s0, W);
    } else {
        convert_row(dst, mode, s0, w);
        for (size_t i = w; i < W; i++) ((float *)dst)[i] = 0.0f;
    }
}

// Panels of an operand whose element (k, i) is s[k*ld + i] (A when trans_a, B when !trans_b): n columns
// cut into ceil(n/W) panels W wide, kc of kcp deep, in the k-major layout of gemm_ukernel.h, panel q at
// dst + q*panel_bytes; zero-padded; overwritten. Works on groups of panels about PACK_GROUP values wide:
// each source row is read in runs that long while the group's few panels are written sequentially
// (all panels at once would scatter every row over hundreds of partly written cache lines). A row pair of
// a group goes through cv in one call when given (PACK_BF16_PAIRS only).
static inline __attribute__((always_inline)) void kmajor_panels(unsigned char *dst, size_t panel_bytes,
                                                                pack_mode mode, const float *s, size_t ld,
                                                                size_t n, size_t W, size_t kc,
                                                                const gemm_bf16_convert *cv) {
    const size_t npan = (n + W - 1) / W, step = mode == PACK_BF16_PAIRS ? 2 : 1;
    const size_t row_bytes = W * sizeof(float); // W fp32 values, or W (k, k+1) pairs of bf16
    const size_t group = PACK_GROUP / W > 0 ? PACK_GROUP / W : 1;
    for (size_t q0 = 0; q0 < npan; q0 += group) {
        const size_t q1 = q0 + group < npan ? q0 + group : npan, run = n - q0 * W < group * W ? n - q0 * W : group * W;
        for (size_t k = 0; k < kc; k += step) {
            const float *s0 = s + k * ld, *s1 = step == 2 && k + 1 < kc ? s0 + ld : NULL;
            // Rows are short runs far apart (the hardware prefetcher misses them): fetch a few rows ahead.
            for (size_t r = k + PACK_PREFETCH_ROWS; r < k + PACK_PREFETCH_ROWS + step && r < kc; r++)
                for (size_t i = 0; i < run; i += 16) __builtin_prefetch(s + r * ld + q0 * W + i);
            if (cv) {
                cv->pair_rows(dst + q0 * panel_bytes + k / step * row_bytes, panel_bytes, s0 + q0 * W,
                              s1 ? s1 + q0 * W : NULL, run, W);
                continue;
            }
            for (size_t q = q0; q < q1; q++) {
                size_t i0 = q * W, w = n - i0 < W ? n - i0 : W;
                kmajor_row(dst + q * panel_bytes + k / step * row_bytes, mode, s0 + i0, s1 ? s1 + i0 : NULL, w,
                           W);
            }
        }
    }
}

// kmajor_panels with the panel widths of the AVX-512 kernels (12 x 32, the hot ones) as constants; cv as
// there.
PACK_CLONES static void pack_kmajor(unsigned char *dst, size_t panel_bytes, pack_mode mode, const float *s,
                                    size_t ld, size_t n, size_t W, size_t kc, const gemm_bf16_convert *cv) {
    if (cv)
        kmajor_panels(dst, panel_bytes, mode, s, ld, n, W, kc, cv);
    else if (W == 12)
        kmajor_panels(dst, panel_bytes, mode, s, ld, n, 12, kc, NULL);
    else if (W == 32)
        kmajor_panels(dst, panel_bytes, mode, s, ld, n, 32, kc, NULL);
    else
        kmajor_panels(dst, panel_bytes, mode, s, ld, n, W, kc, NULL);
}

// The 32-bit panel value u taken from a source column si of depth kc: the bits of si[u] (rounded to bf16
// for PACK_F32_BF16_ROUNDED), or for PACK_BF16_PAIRS the pair si[2u], si[2u + 1] (zero past kc).
static inline uint32_t panel_value(pack_mode mode, const float *si, size_t u, size_t kc) {
    uint32_t bits;
    if (mode == PACK_BF16_PAIRS) return bf16_pair(si[2 * u], 2 * u + 1 < kc ? si[2 * u + 1] : 0.0f);
    float x = mode == PACK_F32_BF16_ROUNDED ? bf16_round(si[u]) : si[u];
    memcpy(&bits, &x, sizeof bits);
    return bits;
}

// Panels of an operand whose element (k, i) is s[i*ld + k] (B when trans_b), same layout and arguments
// as pack_kmajor. Panel column i is the contiguous source row i. With a transposer (tr: the AVX-512
// paths), whole 16 x 16 blocks of panel values go through registers (converted first unless fp32, by
// cv when given); the rest, and everything without one, is written a value at a time.
PACK_CLONES static void pack_transposed(unsigned char *dst, size_t panel_bytes, pack_mode mode, const float *s,
                                        size_t ld, size_t n, size_t W, size_t kc, size_t kcp,
                                        gemm_transpose_fn tr, const gemm_bf16_convert *cv) {
    const size_t step = mode == PACK_BF16_PAIRS ? 2 : 1, units = kcp / step; // 32-bit values per column
    const size_t whole = tr && W % 16 == 0 ? kc / step / 16 * 16 : 0;     // values in whole 16-blocks
    for (size_t q = 0; q * W < n; q++) {
        const size_t i0 = q * W, w = n - i0 < W ? n - i0 : W, u0 = w == W ? whole : 0;
        uint32_t *d = (uint32_t *)(dst + q * panel_bytes);
        if (w < W) memset(d, 0, units * W * sizeof *d);
        for (size_t u = 0; u < u0; u += 16)
            for (size_t r = 0; r < W; r += 16) {
                const float *sb = s + (i0 + r) * ld + u * step;
                if (mode == PACK_F32) {
                    tr(sb, ld, d + u * W + r, W, 16, 16);
                    continue;
                }
                alignas(64) uint32_t t[16 * 16]; // whole block: no value reaches past kc
                for (size_t i = 0; i < 16; i++) {
                    if (cv) { // consecutive k of a source row are already the pairs
                        cv->row((uint16_t *)(t + i * 16), sb + i * ld, 2 * 16);
                        continue;
                    }
                    for (size_t v = 0; v < 16; v++) t[i * 16 + v] = panel_value(mode, sb + i * ld, v, 2 * 16);
                }
                tr(t, 16, d + u * W + r, W, 16, 16);
            }
        for (size_t i = 0; i < w; i++)
            for (size_t u = u0; u < units; u++) d[u * W + i] = panel_value(mode, s + (i0 + i) * ld, u, kc);
    }
}

// Panels of an operand whose element (r, k) is s[r*ld + k] (A when !trans_a): m rows cut into ceil(m/H)
// panels H high, kc of kcp deep, in the row-major layout (a_rows) of gemm_ukernel.h, panel q at
// dst + q*panel_bytes; zero-padded to kcp, and to H rows with pad_rows (a kernel that reads a partial tile's
// rows past m needs them zero; one with a row-limited variant never reads them); overwritten. cv converts the
// rows when given (PACK_BF16_PAIRS only).
PACK_CLONES static void pack_rows(unsigned char *dst, size_t panel_bytes, pack_mode mode, const float *s, size_t ld,
                                  size_t m, size_t H, size_t kc, size_t kcp, const gemm_bf16_convert *cv,
                                  bool pad_rows) {
    const size_t es = mode == PACK_BF16_PAIRS ? sizeof(uint16_t) : sizeof(float);
    for (size_t r = 0; r < m; r++) {
        // Each row is one short run (kc values) of a large matrix: fetch a few rows ahead.
        if (r + PACK_PREFETCH_ROWS < m)
            for (size_t k = 0; k < kc; k += 16) __builtin_prefetch(s + (r + PACK_PREFETCH_ROWS) * ld + k);
        unsigned char *d = dst + r / H * panel_bytes + r % H * kcp * es;
        if (cv)
            cv->row((uint16_t *)d, s + r * ld, kc);
        else
            convert_row(d, mode, s + r * ld, kc);
        memset(d + kc * es, 0, (kcp - kc) * es);
    }
    if (m % H && pad_rows) memset(dst + m / H * panel_bytes + m % H * kcp * es, 0, (H - m % H) * kcp * es);
}

// ---- blocked driver ---------------------------------------------------------------------------------

typedef struct {
    bool trans_a, trans_b, accumulate;
    size_t M, N, K, lda, ldb, ldc;
    const float *A, *B;
    float *C;
    const gemm_ukernel *uk;
    gemm_transpose_fn transpose; // for packing B when trans_b, or NULL
    pack_mode mode;
    const gemm_bf16_convert *cv; // vector conversions for PACK_BF16_PAIRS, or NULL
    size_t esize, kc_blk;
    size_t mc_max; // MC in whole tiles
    size_t ma_blk; // most rows of A packed at once: mc_max, or MA_TRANS when trans_a
    // All of op(B) packed by gemm_pack_b (whole-B layout, see pack_b_panels), or NULL: each thread packs
    // the KC x NC blocks of B it needs into its own buffer.
    const unsigned char *bpacked;
    size_t bblock_bytes; // bytes per K block of the whole-B layout
    bool split_m;        // threads take ranges of rows (else of columns)
    unsigned char *buf;  // per thread: a KC x NC block of packed B (bbytes; 0 with bpacked), then MA x KC of A
    size_t bbytes, buf_stride;
} gemm_job;

// The kernel and blocking for a path and precision (everything but the operands and buffers).
static void job_setup_on(gemm_job *j, const gemm_path *path, bool bf16) {
    j->uk = bf16 && path->bf16 ? path->bf16 : path->f32;
    j->transpose = path->transpose ? *path->transpose : NULL;
    j->mode = !bf16 ? PACK_F32 : path->bf16 ? PACK_BF16_PAIRS : PACK_F32_BF16_ROUNDED;
    j->esize = j->mode == PACK_BF16_PAIRS ? sizeof(uint16_t) : sizeof(float);
    j->cv = j->mode == PACK_BF16_PAIRS ? path->bf16_convert : NULL;
    // Equal K blocks of at most KC: no thin last block, and fewer passes over C than a fixed KC.
    const size_t kc_max = j->mode == PACK_BF16_PAIRS ? KC_BF16 : KC_F32, nkb = (j->K + kc_max - 1) / kc_max;
    j->kc_blk = ((j->K + nkb - 1) / nkb + 7) / 8 * 8;
    SX_CHECK(j->uk->mr * j->uk->nr <= TILE_MAX && MC >= j->uk->mr, "a micro-kernel's register tile must fit TILE_MAX and the MC block");
    j->mc_max = MC / j->uk->mr * j->uk->mr;
    j->ma_blk = j->trans_a ? MA_TRANS / j->mc_max * j->mc_max : j->mc_max;
    const size_t npan = (j->N + j->uk->nr - 1) / j->uk->nr, kcp = (j->kc_blk + 1) / 2 * 2;
    j->bblock_bytes = npan * j->uk->nr * kcp * j->esize;
}

// The same for the current path and precision.
static void job_setup(gemm_job *j) { job_setup_on(j, current_path(), gemm_get_precision() == GEMM_BF16); }

// Sets the per-thread buffer sizes of a set-up job: a KC x NC block of packed B (bbytes; 0 with bpacked),
// then MA x KC of A, each rounded to 64 bytes (buf_stride in all).
static void job_buffers(gemm_job *j) {
    const size_t kc = j->K < j->kc_blk ? j->K : j->kc_blk, kcp = (kc + 1) / 2 * 2;
    const size_t nc = j->N < NC ? j->N : NC, mc = j->M < j->ma_blk ? j->M : j->ma_blk;
    const size_t bblock = (nc + j->uk->nr - 1) / j->uk->nr * j->uk->nr * kcp * j->esize;
    j->bbytes = j->bpacked ? 0 : (bblock + 63) / 64 * 64;
    j->buf_stride = j->bbytes + ((mc + j->uk->mr - 1) / j->uk->mr * j->uk->mr * kcp * j->esize + 63) / 64 * 64;
}

// Whether a path packs bf16 pairs at this precision (its K blocks are then KC_BF16 deep, else KC_F32).
static bool packs_pairs(const gemm_path *path, bool bf16) { return bf16 && path->bf16; }

size_t gemm_workspace_bytes(size_t max_m, size_t max_n, size_t max_k, size_t threads) {
    size_t most = 0;
    for (size_t i = 0; i < NPATHS; i++)
        for (int bf16 = 0; bf16 < 2; bf16++) {
            // A job's buffers grow with min(M, MA_TRANS), min(N, NC) and min(K, its KC) (not with K beyond:
            // K blocks are then equal and at most KC), and are largest with trans_a (MA_TRANS rows of A).
            const size_t kc_max = packs_pairs(&g_paths[i], bf16) ? KC_BF16 : KC_F32;
            gemm_job j = {.trans_a = true, .M = max_m < MA_TRANS ? max_m : MA_TRANS, .N = max_n < NC ? max_n : NC,
                          .K = max_k < kc_max ? max_k : kc_max};
            if (j.M == 0 || j.N == 0 || j.K == 0) return 0;
            job_setup_on(&j, &g_paths[i], bf16);
            job_buffers(&j);
            most = j.buf_stride > most ? j.buf_stride : most;
        }
    size_t bytes;
    return __builtin_mul_overflow(most, threads, &bytes) ? SIZE_MAX : bytes;
}

static _Thread_local const gemm_workspace *tl_ws;

const gemm_workspace *gemm_bind_workspace(const gemm_workspace *ws) {
    const gemm_workspace *before = tl_ws;
    tl_ws = ws;
    return before;
}

// Bytes of the whole-B layout: one bblock_bytes block per K block.
static size_t whole_b_bytes(const gemm_job *j) { return (j->K + j->kc_blk - 1) / j->kc_blk * j->bblock_bytes; }

// Packs columns jc..jc+nc of rows pc..pc+kc of op(B) into panels bpanel bytes apart at dst (overwritten).
static void pack_b_block(const gemm_job *j, unsigned char *dst, size_t bpanel, size_t pc, size_t kc, size_t kcp,
                         size_t jc, size_t nc) {
    if (j->trans_b)
        pack_transposed(dst, bpanel, j->mode, j->B + jc * j->ldb + pc, j->ldb, nc, j->uk->nr, kc, kcp,
                        j->transpose, j->cv);
    else
        pack_kmajor(dst, bpanel, j->mode, j->B + pc * j->ldb + jc, j->ldb, nc, j->uk->nr, kc, j->cv);
}

// Panels q0..q1 of op(B), in every K block, into the whole-B layout at dst: K block b at
// dst + b*bblock_bytes, its panel q at + q*bpanel (bpanel: NR x that block's padded depth). Overwritten.
static void pack_b_panels(const gemm_job *j, unsigned char *dst, size_t q0, size_t q1) {
    const size_t nr = j->uk->nr, ks = j->uk->kstep, c0 = q0 * nr, c1 = q1 * nr < j->N ? q1 * nr : j->N;
    for (size_t pc = 0, b = 0; c0 < c1 && pc < j->K; pc += j->kc_blk, b++) {
        const size_t kc = j->K - pc < j->kc_blk ? j->K - pc : j->kc_blk, kcp = (kc + ks - 1) / ks * ks;
        const size_t bpanel = nr * kcp * j->esize;
        pack_b_block(j, dst + b * j->bblock_bytes + q0 * bpanel, bpanel, pc, kc, kcp, c0, c1 - c0);
    }
}

// Where the micro-kernel reads A (gemm_ukernel.h): panel q (rows q*MR..) at base + q*panel bytes, its
// element (r, k) the 32-bit word r*rs + k*ks from there.
typedef struct {
    const unsigned char *base;
    size_t panel, rs, ks;
} a_panels;

// Writes one tile of the micro-kernel's product, clipped to m x n, through scratch when it is partial.
static void tile(const gemm_job *j, const void *ap, const a_panels *a, const void *bp, size_t kcp, float *c,
                 size_t m, size_t n, bool acc) {
    const gemm_ukernel *uk = j->uk;
    if (m == uk->mr && n == uk->nr) {
        uk->fn(kcp, ap, a->rs, a->ks, bp, c, j->ldc, acc);
        return;
    }
    const bool few = m < uk->mr && uk->rows;   // only the m rows are computed, not the zero padding
    if (few && n == uk->nr) {
        uk->rows(m, kcp, ap, a->rs, a->ks, bp, c, j->ldc, acc);
        return;
    }
    alignas(64) float t[TILE_MAX];
    if (few)
        uk->rows(m, kcp, ap, a->rs, a->ks, bp, t, uk->nr, false);
    else
        uk->fn(kcp, ap, a->rs, a->ks, bp, t, uk->nr, false);
    for (size_t r = 0; r < m; r++)
        for (size_t q = 0; q < n; q++)
            c[r * j->ldc + q] = (acc ? c[r * j->ldc + q] : 0.0f) + t[r * uk->nr + q];
}

// C (mc, nc) = or += an mc x kc block of A (a) times a packed kc x nc block of B (panels bpanel bytes
// apart), tile by tile. The usual order keeps one B panel in L1 while the A block, held in L2, streams past
// it; when the whole B block fits in L2 with room to spare, C is instead written a row of tiles at a time,
// so that it streams through the caches sequentially (this matters when C is large and accumulated: the
// weight gradients).
static void macro_block(const gemm_job *j, const a_panels *a, size_t mc, const unsigned char *bblock,
                        size_t bpanel, size_t nc, size_t kcp, float *c, bool acc) {
    const size_t mr = j->uk->mr, nr = j->uk->nr;
    if (nc * kcp * j->esize <= ROW_ORDER_MAX_B) {
        for (size_t ir = 0; ir < mc; ir += mr)
            for (size_t jr = 0; jr < nc; jr += nr)
                tile(j, a->base + ir / mr * a->panel, a, bblock + jr / nr * bpanel, kcp, c + ir * j->ldc + jr,
                     mc - ir < mr ? mc - ir : mr, nc - jr < nr ? nc - jr : nr, acc);
        return;
    }
    for (size_t jr = 0; jr < nc; jr += nr)
        for (size_t ir = 0; ir < mc; ir += mr)
            tile(j, a->base + ir / mr * a->panel, a, bblock + jr / nr * bpanel, kcp, c + ir * j->ldc + jr,
                 mc - ir < mr ? mc - ir : mr, nc - jr < nr ? nc - jr : nr, acc);
}

// A packed into abuf (pack_rows or pack_kmajor) as the micro-kernel reads it: panels apanel bytes apart,
// kcp deep.
static a_panels packed_a(const gemm_job *j, const unsigned char *abuf, size_t apanel, size_t kcp) {
    if (j->trans_a) return (a_panels){abuf, apanel, 1, j->uk->mr};
    return (a_panels){abuf, apanel, kcp * j->esize / sizeof(float), 1};
}

// Rows ia..ia+ma of the K block pc..pc+kc of op(A) for the micro-kernel: packed into abuf (panels apanel
// bytes apart), or with in_place read where they lie. A partial last tile is read in place too when the
// kernel has a row-limited variant (that reads no row past the tile's), else packed. Sets *a to where the
// rows start; returns how many of them it covers (ma, or the whole tiles read in place: the rest is then the
// packed_a at abuf).
static size_t prepare_a(const gemm_job *j, size_t ia, size_t ma, size_t pc, size_t kc, size_t kcp, bool in_place,
                        unsigned char *abuf, size_t apanel, a_panels *a) {
    const size_t mr = j->uk->mr, direct = in_place ? (j->uk->rows ? ma : ma / mr * mr) : 0, r0 = ia + direct;
    if (direct < ma && j->trans_a)
        pack_kmajor(abuf, apanel, j->mode, j->A + pc * j->lda + r0, j->lda, ma - direct, mr, kc, j->cv);
    else if (direct < ma)
        pack_rows(abuf, apanel, j->mode, j->A + r0 * j->lda + pc, j->lda, ma - direct, mr, kc, kcp, j->cv, !j->uk->rows);
    if (!direct) {
        *a = packed_a(j, abuf, apanel, kcp);
        return ma;
    }
    if (j->trans_a)
        *a = (a_panels){(const unsigned char *)(j->A + pc * j->lda + ia), mr * sizeof(float), 1, j->lda};
    else
        *a = (a_panels){(const unsigned char *)(j->A + ia * j->lda + pc), mr * j->lda * sizeof(float), j->lda, 1};
    return direct;
}

// The rows m0..m1 x columns n0..n1 of C (n0 a multiple of NR), single-threaded. B comes from j->bpacked,
// or is packed here a KC x NC block at a time into bbuf; A is packed an MA x KC block at a time into abuf
// and computed on in MC-row blocks. Except: fp32 A against a block of at most A_IN_PLACE_MAX_PANELS panels
// of B is read where it lies (prepare_a). Each value of A then meets only those few
// panels, and packing it costs about as much as the products (narrow models: the head's gradients, every dx).
static void gemm_block(const gemm_job *j, size_t m0, size_t m1, size_t n0, size_t n1, unsigned char *bbuf,
                       unsigned char *abuf) {
    const gemm_ukernel *uk = j->uk;
    const size_t mr = uk->mr, nr = uk->nr, ks = uk->kstep;
    // Equal blocks of at most MC rows, whole tiles: a thin last block would stream all of B for a few rows.
    const size_t nmb = (m1 - m0 + j->mc_max - 1) / j->mc_max;
    const size_t mc_blk = ((m1 - m0 + nmb - 1) / nmb + mr - 1) / mr * mr;
    const size_t ma_blk = j->trans_a ? j->ma_blk / mc_blk * mc_blk : mc_blk;
    for (size_t jc = n0; jc < n1; jc += NC) {
        const size_t nc = n1 - jc < NC ? n1 - jc : NC;
        const bool in_place = j->mode == PACK_F32 && nc <= A_IN_PLACE_MAX_PANELS * nr;
        for (size_t pc = 0; pc < j->K; pc += j->kc_blk) {
            const size_t kc = j->K - pc < j->kc_blk ? j->K - pc : j->kc_blk;
            const size_t kcp = (kc + ks - 1) / ks * ks;
            const size_t bpanel = nr * kcp * j->esize, apanel = mr * kcp * j->esize;
            const unsigned char *bblock = bbuf;
            if (j->bpacked)
                bblock = j->bpacked + pc / j->kc_blk * j->bblock_bytes + jc / nr * bpanel;
            else
                pack_b_block(j, bbuf, bpanel, pc, kc, kcp, jc, nc);
            const bool acc = j->accumulate || pc > 0;
            for (size_t ia = m0; ia < m1; ia += ma_blk) {
                const size_t ma = m1 - ia < ma_blk ? m1 - ia : ma_blk;
                a_panels a;
                const size_t covered = prepare_a(j, ia, ma, pc, kc, kcp, in_place, abuf, apanel, &a);
                for (size_t ic = 0; ic < covered; ic += mc_blk) {
                    const size_t mc = covered - ic < mc_blk ? covered - ic : mc_blk;
                    a_panels at = a;
                    at.base += ic / mr * a.panel;
                    macro_block(j, &at, mc, bblock, bpanel, nc, kcp, j->C + (ia + ic) * j->ldc + jc, acc);
                }
                if (covered < ma) { // the partial tile in_place left, packed
                    const a_panels rest = packed_a(j, abuf, apanel, kcp);
                    macro_block(j, &rest, ma - covered, bblock, bpanel, nc, kcp, j->C + (ia + covered) * j->ldc + jc,
                                acc);
                }
            }
        }
    }
}

// Thread tid of nt computes its own rectangle of C: a range of rows or of columns (j->split_m), in whole
// tiles.
static void gemm_thread(const gemm_job *j, int tid, int nt) {
    const size_t t = j->split_m ? j->uk->mr : j->uk->nr, len = j->split_m ? j->M : j->N;
    const size_t tiles = (len + t - 1) / t;
    size_t lo = tiles * tid / nt * t, hi = tiles * (tid + 1) / nt * t;
    hi = hi < len ? hi : len;
    unsigned char *buf = j->buf + (size_t)tid * j->buf_stride;
    if (lo < hi) {
        if (j->split_m)
            gemm_block(j, lo, hi, 0, j->N, buf, buf + j->bbytes);
        else
            gemm_block(j, 0, j->M, lo, hi, buf, buf + j->bbytes);
    }
}

// Whether nt threads should split the rows of C (else its columns). Threads share no work and never wait
// for each other: sharing B's packing would take a barrier, which saves about 1% of a product on a quiet
// machine but stalls both threads whenever a busy one deschedules either. The per-thread cost, in
// values moved: packing counts PACK_COST per value (read, convert, write), reading packed B 1 per value
// per block of MC rows. Splitting rows, every thread packs all of B (unless packed already, bpacked) and
// its rows of A; splitting columns, its columns of B and all of A.
enum { PACK_COST = 2 };
static bool split_rows(const gemm_job *j, size_t nt) {
    const size_t mr = j->uk->mr, mtiles = (j->M + mr - 1) / mr, ntiles = (j->N + j->uk->nr - 1) / j->uk->nr;
    if (mtiles < nt || ntiles < nt) return mtiles >= ntiles;
    const size_t m_rows = (mtiles + nt - 1) / nt * mr;
    const size_t row_blocks = (m_rows + j->mc_max - 1) / j->mc_max;
    const size_t all_blocks = (j->M + j->mc_max - 1) / j->mc_max;
    const double b = (double)j->K * j->N, b_pack = j->bpacked ? 0 : PACK_COST;
    const double by_rows = (double)PACK_COST * m_rows * j->K + b * (b_pack + row_blocks);
    const double by_cols = (double)PACK_COST * j->M * j->K + b / nt * (b_pack + all_blocks);
    return by_rows <= by_cols;
}

// Runs a set-up job (job_setup, operands, optionally bpacked): picks the threads and their split, sizes
// the buffers and computes C.
static void gemm_run(gemm_job *j) {
    const gemm_workspace *ws = tl_ws;
    SX_CHECK(ws != NULL, "bind a workspace with gemm_bind_workspace (sized by gemm_workspace_bytes) on each thread that calls gemm");
    job_buffers(j);
    const size_t slots = ws->bytes / j->buf_stride;
    SX_CHECK(slots >= 1, "the bound gemm workspace is too small for this product: size it with gemm_workspace_bytes for the largest M, N and K");
    int nt = 1;
    if (!omp_in_parallel() && j->M * j->N * j->K >= GEMM_PARALLEL_MIN_MACS) nt = omp_get_max_threads();
    if ((size_t)nt > slots) nt = (int)slots;   // a workspace sized for fewer threads runs on fewer
    j->split_m = split_rows(j, (size_t)nt);
    j->buf = ws->buf;
    if (nt == 1) {
        gemm_thread(j, 0, 1);
        return;
    }
#pragma omp parallel num_threads(nt)
    gemm_thread(j, omp_get_thread_num(), omp_get_num_threads());
}

void gemm(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, const float *A, size_t lda,
          const float *B, size_t ldb, float *C, size_t ldc, bool accumulate) {
    if (M == 0 || N == 0) return;
    if (K == 0) {
        if (!accumulate)
            for (size_t i = 0; i < M; i++) memset(C + i * ldc, 0, N * sizeof *C);
        return;
    }
    gemm_job j = {.trans_a = trans_a, .trans_b = trans_b, .accumulate = accumulate, .M = M, .N = N, .K = K,
                  .lda = lda, .ldb = ldb, .ldc = ldc, .A = A, .B = B, .C = C};
    job_setup(&j);
    gemm_run(&j);
}

// ---- op(B) packed once for several products ---------------------------------------------------------

size_t gemm_packed_b_bytes(size_t K, size_t N) {
    size_t most = 0;
    if (K == 0 || N == 0) return 0;
    for (size_t i = 0; i < NPATHS; i++)
        for (int bf16 = 0; bf16 < 2; bf16++) {
            gemm_job j = {.N = N, .K = K};
            job_setup_on(&j, &g_paths[i], bf16);
            size_t bytes;
            if (__builtin_mul_overflow((K + j.kc_blk - 1) / j.kc_blk, j.bblock_bytes, &bytes)) return SIZE_MAX;
            most = bytes > most ? bytes : most;
        }
    return most;
}

void gemm_pack_b(gemm_packed_b *p, void *panels, size_t bytes, bool trans_b, size_t K, size_t N, const float *B,
                 size_t ldb) {
    *p = (gemm_packed_b){.trans_b = trans_b, .K = K, .N = N, .B = B, .ldb = ldb};
    if (K == 0 || N == 0) return;
    gemm_job j = {.trans_b = trans_b, .N = N, .K = K, .B = B, .ldb = ldb};
    job_setup(&j);
    SX_CHECK(whole_b_bytes(&j) <= bytes, "gemm_pack_b's panels are too small: size them with gemm_packed_b_bytes(K, N)");
    p->kernel = j.uk;
    p->mode = (int)j.mode;
    p->panels = panels;
    const size_t npan = (N + j.uk->nr - 1) / j.uk->nr;
    const bool threaded = !omp_in_parallel() && K * N >= GEMM_PARALLEL_MIN_MACS / 16;
#pragma omp parallel if (threaded)
    {
        const size_t tid = (size_t)omp_get_thread_num(), n = (size_t)omp_get_num_threads();
        pack_b_panels(&j, panels, npan * tid / n, npan * (tid + 1) / n);
    }
}

void gemm_packed(bool trans_a, size_t M, const float *A, size_t lda, const gemm_packed_b *p, float *C, size_t ldc,
                 bool accumulate) {
    if (p->panels) {
        gemm_job j = {.trans_a = trans_a, .trans_b = p->trans_b, .accumulate = accumulate, .M = M, .N = p->N,
                      .K = p->K, .lda = lda, .ldb = p->ldb, .ldc = ldc, .A = A, .B = p->B, .C = C};
        job_setup(&j);
        if (p->kernel == j.uk && p->mode == (int)j.mode) {
            j.bpacked = p->panels;
            if (M > 0) gemm_run(&j);
            return;
        }
    }
    // Not packed (K or N is 0), or packed for another kernel or precision: B itself is
    // still right.
    gemm(trans_a, p->trans_b, M, p->N, p->K, A, lda, p->B, p->ldb, C, ldc, accumulate);
}
