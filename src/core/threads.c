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
