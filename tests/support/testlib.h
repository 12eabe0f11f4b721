// testlib: the few assertions sextant's C tests need. A failed check prints file:line and the values,
// counts a failure and carries on; test_main() returns non-zero if anything failed. Not a framework:
// each tests/test_*.c is its own binary with a main() that calls its cases through TEST_RUN.
#ifndef SEXTANT_TESTLIB_H
#define SEXTANT_TESTLIB_H
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>

extern int testlib_failures;
extern int testlib_checks;

bool testlib_check(bool ok, const char *file, int line, const char *expr);
bool testlib_close(double got, double want, double rtol, double atol, const char *file, int line,
                   const char *what);
// Max normalised error between two arrays: max |a-b| / (atol + rtol*|b|). <= 1 means within tolerance.
double testlib_max_rel_err(const float *got, const float *want, size_t n, double rtol, double atol,
                           size_t *worst_index);
bool testlib_arrays_close(const float *got, const float *want, size_t n, double rtol, double atol,
                          const char *file, int line, const char *what);

// P(χ²(dof) > chi2): the p-value of a χ² statistic.
double testlib_chi2_sf(double chi2, double dof);
// Pearson's χ² test of counts (n_cells draws per cell) against the law probs (summing to 1): the p-value;
// cells expecting under 5 draws are pooled. *dof (may be NULL) gets the degrees of freedom used.
double testlib_chi2_pvalue(const size_t *counts, const double *probs, size_t n_cells, size_t *dof);

#define CHECK(cond) testlib_check((cond), __FILE__, __LINE__, #cond)
#define CHECK_CLOSE(got, want, rtol, atol) testlib_close((got), (want), (rtol), (atol), __FILE__, __LINE__, #got)
#define CHECK_ARRAYS_CLOSE(got, want, n, rtol, atol) \
    testlib_arrays_close((got), (want), (n), (rtol), (atol), __FILE__, __LINE__, #got)

// Binds on the calling thread a GEMM packing workspace that holds any product on all threads (kept until
// exit), for tests that call gemm, its users or the block modules directly; the model, the decoder and the
// optimizer bind their own.
void testlib_bind_gemm_workspace(void);

// A fresh directory /tmp/sextant_test_NAME_XXXXXX for a test's files, removed with them at exit (one per
// test binary); exits with a message where it cannot be made.
const char *testlib_scratch_dir(const char *name);

// Runs one case and prints "ok   name" or "FAIL name".
#define TEST_RUN(fn) testlib_run(#fn, fn)
void testlib_run(const char *name, void (*fn)(void));
// Prints the summary line and returns the process exit code.
int testlib_finish(const char *suite);

#endif
