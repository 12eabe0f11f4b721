#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "core/threads.h"

void threads_wait_policy_setup(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;   // the user's choice, or ours after the exec
    if (setenv("GOMP_SPINCOUNT", THREADS_SPINCOUNT, 1) != 0) return;
    execv("/proc/self/exe", argv);
    unsetenv("GOMP_SPINCOUNT");   // the exec failed: run on with the runtime's default
}

int threads_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int threads_most(void) {
    int cores = threads_cores();
    return cores > omp_get_max_threads() ? cores : omp_get_max_threads();
}

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

threads_load threads_load_sample(void) {
    threads_load l = {.wall = clock_s(CLOCK_MONOTONIC), .own = clock_s(CLOCK_PROCESS_CPUTIME_ID)};
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return l;
    // cpu  user nice system idle iowait irq softirq steal ... (in clock ticks, all CPUs together)
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                   &v[6], &v[7]);
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (n < 4 || hz <= 0) return l;
    unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    l.busy = (double)busy / (double)hz;
    l.valid = true;
    return l;
}

int threads_adapt(const threads_load *from, const threads_load *to, int cores, double min_window) {
    double window = to->wall - from->wall;
    if (cores < sysconf(_SC_NPROCESSORS_ONLN)) return 0;   // bound to some CPUs: /proc/stat counts them all
    if (!from->valid || !to->valid || window < min_window || window <= 0) return 0;
    double others = (to->busy - from->busy - (to->own - from->own)) / window;   // in cores
    int t = cores - (int)lround(others > 0 ? others : 0);
    return t < 1 ? 1 : t > cores ? cores : t;
}

flag_def threads_flag(long *threads) {
    return (flag_def){"threads", FLAG_INT, threads, "0",
                      "OpenMP threads (0: the cores other processes leave free, rechecked as it runs)"};
}

// What threads_start set: whether threads_recheck follows the load, and the sample it measures from.
static bool follow;
static threads_load last;

sx_status threads_start(long n, int share, const char *note_cmd) {
    if (n < 0 || n > THREADS_MAX)
        return sx_fail(SX_ERR_ARG, "--threads must be 0 (the cores other processes leave free) or a thread count "
                       "from 1 to %d, not %ld", THREADS_MAX, n);
    if (n > 0) omp_set_num_threads((int)n);
    else if (share > 0) omp_set_num_threads(share);
    follow = n == 0 && share <= 0 && !getenv("OMP_NUM_THREADS");
    last = threads_load_sample();
    // More threads than cores only makes them wait for each other (every product splits its work evenly).
    const int cores = threads_cores();
    if (n > cores && note_cmd)
        fprintf(stderr, "sextant %s: note: --threads %ld is more than the %d cores this process may use: "
                        "expect it to run slower than with %d\n", note_cmd, n, cores, cores);
    return SX_OK;
}

void threads_recheck(void) {
    if (!follow || omp_in_parallel() || clock_s(CLOCK_MONOTONIC) - last.wall < THREADS_ADAPT_WINDOW) return;
    threads_load now = threads_load_sample();
    int t = threads_adapt(&last, &now, threads_cores(), THREADS_ADAPT_WINDOW);
    if (!t) return;
    if (t != omp_get_max_threads()) omp_set_num_threads(t);
    last = now;
}
