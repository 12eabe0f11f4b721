#include "testlib.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "core/status.h"
#include "core/threads.h"
#include "kernels/gemm.h"

int testlib_failures = 0;
int testlib_checks = 0;
static int case_failures;

bool testlib_check(bool ok, const char *file, int line, const char *expr) {
    testlib_checks++;
    if (!ok) {
        testlib_failures++;
        case_failures++;
        fprintf(stderr, "  %s:%d: check failed: %s\n", file, line, expr);
    }
    return ok;
}

bool testlib_close(double got, double want, double rtol, double atol, const char *file, int line,
                   const char *what) {
    bool ok = isfinite(got) && fabs(got - want) <= atol + rtol * fabs(want);
    if (!ok)
        fprintf(stderr, "  %s:%d: %s = %.9g, want %.9g (rtol %g, atol %g)\n", file, line, what, got, want,
                rtol, atol);
    return testlib_check(ok, file, line, what);
}

double testlib_max_rel_err(const float *got, const float *want, size_t n, double rtol, double atol,
                           size_t *worst_index) {
    double worst = 0;
    size_t wi = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]) / (atol + rtol * fabs((double)want[i]));
        if (!isfinite((double)got[i])) e = INFINITY;
        if (e > worst || (i == 0 && e != e)) { worst = e; wi = i; }
    }
    if (worst_index) *worst_index = wi;
    return worst;
}

bool testlib_arrays_close(const float *got, const float *want, size_t n, double rtol, double atol,
                          const char *file, int line, const char *what) {
    size_t wi;
    double e = testlib_max_rel_err(got, want, n, rtol, atol, &wi);
    bool ok = e <= 1.0;
    if (!ok)
        fprintf(stderr, "  %s:%d: %s[%zu] = %.9g, want %.9g (normalised error %.3g, n=%zu)\n", file, line,
                what, wi, got[wi], want[wi], e, n);
    return testlib_check(ok, file, line, what);
}

void testlib_run(const char *name, void (*fn)(void)) {
    case_failures = 0;
    fn();
    printf("%s %s\n", case_failures ? "FAIL" : "ok  ", name);
    fflush(stdout);
}

int testlib_finish(const char *suite) {
    printf("%s: %d checks, %d failed\n", suite, testlib_checks, testlib_failures);
    return testlib_failures ? 1 : 0;
}

void testlib_bind_gemm_workspace(void) {
    static gemm_workspace ws;
    if (!ws.buf) {
        ws.bytes = gemm_workspace_bytes(SIZE_MAX, SIZE_MAX, SIZE_MAX, (size_t)threads_most());
        ws.buf = sx_alloc_huge(ws.bytes, "the tests' GEMM workspace");
        if (!ws.buf) exit(1);   // sx_alloc_huge said what
    }
    gemm_bind_workspace(&ws);
}
