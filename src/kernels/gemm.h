// gemm: the matrix products training needs, row-major, fp32 in and out.
// Layers: this file is the portable blocking framework (packing, cache blocking, threading, dispatch);
// the register-tiled micro-kernels live in gemm_ukernel_<isa>.c and are chosen at run time from CPUID.
// Not responsible for: batching over heads or experts (callers loop), anything but plain products.
#ifndef SEXTANT_KERNELS_GEMM_H
#define SEXTANT_KERNELS_GEMM_H
#include <stdbool.h>
#include <stddef.h>

typedef enum { GEMM_FP32 = 0, GEMM_BF16 = 1 } gemm_precision;

// GEMM's packing workspace: memory the caller owns (gemm allocates nothing and cannot fail). A thread binds
// one with gemm_bind_workspace before its products; gemm() then packs into it, one slot per thread it runs
// on (as many threads as OpenMP allows and the workspace has slots). Calling gemm on a thread with no bound
// workspace, or one too small for a single slot of the product, is a programmer error (SX_CHECK). Inside a
// parallel region every thread that calls gemm needs its own.
typedef struct {
    void *buf;       // 64-byte aligned (huge-page aligned is faster: the packed blocks span megabytes)
    size_t bytes;
} gemm_workspace;

// Bytes of workspace for products with M <= max_m, N <= max_n, K <= max_k run on up to `threads` threads,
// on every micro-kernel path and precision (either may be switched at run time). SIZE_MAX on overflow.
size_t gemm_workspace_bytes(size_t max_m, size_t max_n, size_t max_k, size_t threads);
// Makes ws (NULL: none) the calling thread's workspace; returns the one bound before, for the caller to
// restore. ws must stay valid while bound.
const gemm_workspace *gemm_bind_workspace(const gemm_workspace *ws);

// C (M,N) = op(A) · op(B), or C += op(A) · op(B) when accumulate.
// op(A) is (M,K): A is stored (M,K) with row stride lda, or (K,M) with row stride lda when trans_a.
// op(B) is (K,N): B is stored (K,N) with row stride ldb, or (N,K) with row stride ldb when trans_b.
// Training uses: y = x·Wᵀ  (trans_b), dx = dy·W (plain), dW += dyᵀ·x (trans_a, accumulate).
// Threads with OpenMP when called outside a parallel region; single-threaded inside one.
// M, N or K may be 0 (K == 0 leaves C, or zeroes it when !accumulate). Packs into the bound workspace.
void gemm(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, const float *A, size_t lda,
          const float *B, size_t ldb, float *C, size_t ldc, bool accumulate);

// op(B) packed once for several products with the same B, e.g. a weight over chunks of rows (the LM head):
// gemm() packs B again on every call. The packing is for the kernel and precision current at gemm_pack_b;
// gemm_packed() falls back to gemm() on p->B when they have changed since, so a product is always right.
// B must not change while it is packed, nor the panels' memory be reused. Fields are internal.
typedef struct {
    bool trans_b;
    size_t K, N, ldb;
    const float *B;
    const void *kernel;      // the micro-kernel the panels are laid out for
    int mode;                // and their element format
    const unsigned char *panels;   // NULL: not packed
} gemm_packed_b;

// Bytes of panels gemm_pack_b needs for a (K,N) op(B), on every path and precision. SIZE_MAX on overflow.
size_t gemm_packed_b_bytes(size_t K, size_t N);
// Packs op(B) (K,N), stored as for gemm(), into panels (the caller's memory, 64-byte aligned, at least
// gemm_packed_b_bytes(K, N) bytes, overwritten); threads with OpenMP outside a parallel region.
void gemm_pack_b(gemm_packed_b *p, void *panels, size_t bytes, bool trans_b, size_t K, size_t N, const float *B,
                 size_t ldb);
// gemm() with op(B) from p: C (M, p->N) = op(A) · op(B), or += when accumulate.
void gemm_packed(bool trans_a, size_t M, const float *A, size_t lda, const gemm_packed_b *p, float *C, size_t ldc,
                 bool accumulate);

// The specification: same contract as gemm(), scalar, accumulates each dot product in double.
void gemm_ref(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, const float *A, size_t lda,
              const float *B, size_t ldb, float *C, size_t ldc, bool accumulate);

// Process-wide operand precision. GEMM_BF16 rounds A and B to bf16 (round-to-nearest-even) while packing
// and accumulates in fp32 (vdpbf16ps where available; an exact emulation elsewhere).
void gemm_set_precision(gemm_precision p);
gemm_precision gemm_get_precision(void);

// Micro-kernel path: chosen from CPUID on first use; SEXTANT_GEMM_PATH=generic|avx2|avx512|avx512bf16 in the
// environment, or gemm_force_path(), overrides it (tests use this to cover every path the machine has).
// gemm_force_path returns false (and changes nothing) for an unknown name or one this CPU cannot run.
bool gemm_force_path(const char *name);
const char *gemm_path_name(void);
// Names of the paths this CPU supports, NULL-terminated (for tests and benchmarks).
const char *const *gemm_supported_paths(void);

// Transposes a matrix of 32-bit values (fp32, or pairs of bf16), dst[c*dld + r] = src[r*sld + c] for
// r < rows, c < cols (strides in values; the two must not overlap): blocks of up to 16 x 16 through the
// current path's register transposer when it has one, else a value at a time. Values are moved bit for bit.
// For the small strided tiles of attention.
void gemm_transpose(const void *src, size_t sld, void *dst, size_t dld, size_t rows, size_t cols);

// Rounds fp32 to the nearest bf16 (ties to even), returned as fp32. NaN stays NaN.
float bf16_round(float x);

#endif
