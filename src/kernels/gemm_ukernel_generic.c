// gemm_ukernel_generic: portable fp32 micro-kernel in plain C (see gemm_ukernel.h for the packed
// layouts). 6 x 8 tile kept in a local array the compiler holds in vector registers of the baseline ISA.
#include "kernels/gemm_ukernel.h"

enum { MR = 6, NR = 8 };

static void ukernel_generic(size_t kc, const void *ap, size_t rs, size_t ks, const void *bp, float *c, size_t ldc,
                            bool accumulate) {
    const float *a = ap, *b = bp;
    float acc[MR][NR] = {{0}};
    for (size_t k = 0; k < kc; k++) {
        for (int r = 0; r < MR; r++)
            for (int j = 0; j < NR; j++) acc[r][j] += a[r * rs] * b[j];
        a += ks;
        b += NR;
    }
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++) c[r * ldc + j] = accumulate ? c[r * ldc + j] + acc[r][j] : acc[r][j];
}

const gemm_ukernel gemm_ukernel_generic = {MR, NR, 1, ukernel_generic, NULL};
