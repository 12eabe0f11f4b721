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

static char scratch[128];

static void remove_scratch(void) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", scratch);
}

const char *testlib_scratch_dir(const char *name) {
    snprintf(scratch, sizeof scratch, "/tmp/sextant_test_%s_XXXXXX", name);
    if (!mkdtemp(scratch)) {
        perror(scratch);
        exit(1);
    }
    atexit(remove_scratch);
    return scratch;
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

// Q(a, x) = Γ(a, x) / Γ(a): the series for x < a + 1, else the continued fraction (Lentz), as in Numerical
// Recipes' gammq; both to relative 1e-14.
static double gamma_q(double a, double x) {
    if (x <= 0) return 1;
    double lead = exp(-x + a * log(x) - lgamma(a));
    if (x < a + 1) {
        double term = 1 / a, sum = term;
        for (int n = 1; n < 10000 && fabs(term) > fabs(sum) * 1e-15; n++) sum += (term *= x / (a + n));
        return 1 - sum * lead;
    }
    double b = x + 1 - a, c = 1 / 1e-300, d = 1 / b, h = d;
    for (int i = 1; i < 10000; i++) {
        double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (fabs(d) < 1e-300) d = 1e-300;
        c = b + an / c;
        if (fabs(c) < 1e-300) c = 1e-300;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-15) break;
    }
    return h * lead;
}

double testlib_chi2_sf(double chi2, double dof) { return gamma_q(dof / 2, chi2 / 2); }

double testlib_chi2_pvalue(const size_t *counts, const double *probs, size_t n_cells, size_t *dof) {
    // Pearson's χ², cells expecting fewer than 5 draws pooled into one (so the χ² law applies).
    size_t total = 0, cells = 0, pooled_n = 0;
    double chi2 = 0, pooled_p = 0;
    for (size_t i = 0; i < n_cells; i++) total += counts[i];
    for (size_t i = 0; i < n_cells; i++) {
        double e = probs[i] * (double)total;
        if (e < 5) { pooled_n += counts[i]; pooled_p += probs[i]; continue; }
        chi2 += (counts[i] - e) * (counts[i] - e) / e;
        cells++;
    }
    if (pooled_p > 0 || pooled_n > 0) {
        double e = pooled_p * (double)total;
        if (e <= 0) return 0;   // draws where the law has none
        chi2 += (pooled_n - e) * (pooled_n - e) / e;
        cells++;
    }
    if (dof) *dof = cells - 1;
    return cells > 1 ? testlib_chi2_sf(chi2, (double)(cells - 1)) : 1;
}
