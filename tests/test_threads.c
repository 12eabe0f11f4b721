// core/threads: the free cores --threads 0 follows, from load samples of a fake /proc tree (the machine's
// busy time in PROC/stat, each process's CPU time and nice in PROC/PID/stat): a process at our priority
// takes its cores, a niced one by the share of a core it would keep against one of our threads.
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/threads.h"
#include "support/testlib.h"

static const char *root;
static long hz;
static threads_load from, to;   // static: each holds a table of processes

// PROC/stat with `user` and `niced` seconds of busy time (the kernel puts a niced process's time in the
// second column).
static void write_machine(double user, double niced) {
    char path[128];
    snprintf(path, sizeof path, "%s/stat", root);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fprintf(f, "cpu  %lld %lld 0 100000 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n", (long long)(user * hz),
            (long long)(niced * hz));
    fclose(f);
}

// PROC/PID/stat of a process at `nice` with `cpu` seconds of CPU time (split between utime and stime); its
// name holds spaces and parentheses, as a process may choose.
static void write_process(int pid, double cpu, int nice) {
    char path[128];
    snprintf(path, sizeof path, "%s/%d", root, pid);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%d/stat", root, pid);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    long long ticks = (long long)(cpu * hz);
    fprintf(f, "%d (busy) (x y) R 1 %d %d 0 -1 4194304 120 0 0 0 %lld %lld 0 0 %d %d 1 0 5000 9000000 200 "
               "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
            pid, pid, pid, ticks - ticks / 4, ticks / 4, 20 + nice, nice);
    fclose(f);
}

static void clear_root(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s/[0-9]*", root);
    CHECK(system(cmd) == 0);
}

// Samples the tree into *l as taken at `wall` seconds by a process at `our_nice` that used no CPU itself.
static void sample(threads_load *l, double wall, int our_nice) {
    threads_load_sample(l, root);
    l->wall = wall;
    l->own = 0;
    l->nice = our_nice;
}

// The threads --threads 0 would run on `cores` cores when, over one second, `n` processes at `nice` each
// keep a core busy (started before the window, or within it when `new_in_window`), against our_nice.
static int threads_beside(int n, int nice, int our_nice, bool new_in_window, int cores) {
    clear_root();
    write_machine(50, 70);
    for (int i = 0; i < n && !new_in_window; i++) write_process(4000 + i, 10, nice);
    sample(&from, 100, our_nice);
    write_machine(nice > 0 ? 50 : 50 + n, nice > 0 ? 70 + n : 70);
    for (int i = 0; i < n; i++) write_process(4000 + i, new_in_window ? 1 : 11, nice);
    sample(&to, 101, our_nice);
    CHECK(from.valid && to.valid && from.n_procs == (new_in_window ? 0 : n) && to.n_procs == n);
    return threads_adapt(&from, &to, cores, THREADS_ADAPT_WINDOW);
}

static void test_niced_processes_count_by_their_share(void) {
    // threads_adapt gives no advice when bound to fewer than the machine's CPUs: count at least those.
    const int online = (int)sysconf(_SC_NPROCESSORS_ONLN), cores = online > 16 ? online : 16;
    CHECK(threads_beside(1, 0, 0, false, cores) == cores - 1);    // our priority: its core is taken
    CHECK(threads_beside(1, 19, 0, false, cores) == cores);       // nice 19: counts 0.03 of a core
    CHECK(threads_beside(1, 19, 0, true, cores) == cores);        // the same, started within the window
    CHECK(threads_beside(10, 10, 0, false, cores) == cores - 2);  // nice 10: 0.19 each, 1.94 cores
    CHECK(threads_beside(3, 1, 0, false, cores) == cores - 3);    // nice 1: 0.89 each, 2.67 cores
    CHECK(threads_beside(2, 19, 19, false, cores) == cores - 2);  // at our nice 19, nice 19 is our priority
    CHECK(threads_beside(2, 0, 10, false, cores) == cores - 2);   // more important than us: counts fully
}

// What no listed process accounts for counts fully, as the machine's busy time: a process whose stat
// cannot be read, one that ended within the window, and all of them where PROC/PID cannot be listed.
static void test_unlisted_time_counts_fully(void) {
    const int online = (int)sysconf(_SC_NPROCESSORS_ONLN), cores = online > 16 ? online : 16;
    clear_root();
    write_machine(50, 70);
    write_process(4000, 10, 19);
    sample(&from, 100, 0);
    write_machine(50, 71);
    char path[128];
    snprintf(path, sizeof path, "%s/4000/stat", root);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) fclose(f);   // empty: unreadable
    sample(&to, 101, 0);
    CHECK(to.n_procs == 0);
    CHECK(threads_adapt(&from, &to, cores, THREADS_ADAPT_WINDOW) == cores - 1);
    from.n_procs = -1;   // as where /proc/PID cannot be listed
    write_process(4000, 11, 19);
    sample(&to, 101, 0);
    CHECK(to.n_procs == 1);
    CHECK(threads_adapt(&from, &to, cores, THREADS_ADAPT_WINDOW) == cores - 1);
    // No PROC/stat: no advice.
    snprintf(path, sizeof path, "%s/nothere", root);
    threads_load_sample(&to, path);
    CHECK(!to.valid && to.n_procs == -1);
    CHECK(threads_adapt(&from, &to, cores, THREADS_ADAPT_WINDOW) == 0);
}

// On the real /proc: this process is left out, and every process listed has CPU time and a nice value.
static void test_real_proc(void) {
    threads_load_sample(&to, "/proc");
    CHECK(to.valid);
    CHECK(to.n_procs >= 1);   // our parent at least
    bool self = false, sane = true;
    for (int i = 0; i < to.n_procs; i++) {
        self |= to.procs[i].pid == (int)getpid();
        sane &= to.procs[i].cpu >= 0 && to.procs[i].nice >= -20 && to.procs[i].nice <= 19;
        sane &= i == 0 || to.procs[i - 1].pid < to.procs[i].pid;
    }
    CHECK(!self);
    CHECK(sane);
}

int main(void) {
    hz = sysconf(_SC_CLK_TCK);
    root = testlib_scratch_dir("threads");
    TEST_RUN(test_niced_processes_count_by_their_share);
    TEST_RUN(test_unlisted_time_counts_fully);
    TEST_RUN(test_real_proc);
    return testlib_finish("threads");
}
