// core/threads: the free cores --threads 0 follows, from load samples of a fake /proc tree (the machine's
// busy time in PROC/stat, each process's CPU time and nice in PROC/PID/stat, autogroups in
// PROC/sys/kernel/sched_autogroup_enabled, PROC/self/autogroup and PROC/PID/autogroup): a process at our
// priority takes its cores, a niced one by the share of a core it would keep against one of our threads,
// by its autogroup's nice when it is in another autogroup than ours.
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

// PROC/NAME/autogroup: "/autogroup-ID nice NICE", empty for id 0 (in no autogroup), none for id -1.
static void write_group(const char *name, threads_group g) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", root, name);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/autogroup", root, name);
    remove(path);
    if (g.id < 0) return;
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    if (g.id > 0) fprintf(f, "/autogroup-%ld nice %d\n", g.id, g.nice);
    fclose(f);
}

// PROC/sys/kernel/sched_autogroup_enabled holding `enabled` ("1", "0"), or none for NULL.
static void write_autogroups(const char *enabled) {
    char path[128];
    snprintf(path, sizeof path, "%s/sys/kernel/sched_autogroup_enabled", root);
    remove(path);
    if (!enabled) return;
    char cmd[160];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/sys/kernel", root);
    CHECK(system(cmd) == 0);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fprintf(f, "%s\n", enabled);
    fclose(f);
}

static const threads_group no_group = {.id = -1};

static void clear_root(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s/[0-9]*", root);
    CHECK(system(cmd) == 0);
}

// Samples the tree into *l (since the sample `since`) as taken at `wall` seconds by a process at `our_nice`
// that used no CPU itself.
static void sample(threads_load *l, const threads_load *since, double wall, int our_nice) {
    threads_load_sample(l, since, root);
    l->wall = wall;
    l->own = 0;
    l->nice = our_nice;
}

// The threads --threads 0 would run on `cores` cores when, over one second, `n` processes at `nice` in
// autogroup `group` each keep a core busy (started before the window, or within it when `new_in_window`),
// against our_nice.
static int threads_beside(int n, int nice, threads_group group, int our_nice, bool new_in_window, int cores) {
    clear_root();
    write_machine(50, 70);
    for (int i = 0; i < n && !new_in_window; i++) write_process(4000 + i, 10, nice);
    sample(&from, NULL, 100, our_nice);
    write_machine(nice > 0 ? 50 : 50 + n, nice > 0 ? 70 + n : 70);
    char name[16];
    for (int i = 0; i < n; i++) {
        write_process(4000 + i, new_in_window ? 1 : 11, nice);
        snprintf(name, sizeof name, "%d", 4000 + i);
        write_group(name, group);
    }
    sample(&to, &from, 101, our_nice);
    CHECK(from.valid && to.valid && from.n_procs == (new_in_window ? 0 : n) && to.n_procs == n);
    return threads_adapt(&from, &to, cores, THREADS_ADAPT_WINDOW);
}

// threads_adapt gives no advice when bound to fewer than the machine's CPUs: count at least those.
static int test_cores(void) {
    const int online = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return online > 16 ? online : 16;
}

static void test_niced_processes_count_by_their_share(void) {
    write_autogroups(NULL);   // a kernel without autogroups: task nice alone
    const int cores = test_cores();
    CHECK(threads_beside(1, 0, no_group, 0, false, cores) == cores - 1);    // our priority: its core is taken
    CHECK(threads_beside(1, 19, no_group, 0, false, cores) == cores);       // nice 19: counts 0.03 of a core
    CHECK(threads_beside(1, 19, no_group, 0, true, cores) == cores);        // the same, started within the window
    CHECK(threads_beside(10, 10, no_group, 0, false, cores) == cores - 2);  // nice 10: 0.19 each, 1.94 cores
    CHECK(threads_beside(3, 1, no_group, 0, false, cores) == cores - 3);    // nice 1: 0.89 each, 2.67 cores
    CHECK(threads_beside(2, 19, no_group, 19, false, cores) == cores - 2);  // at our nice 19, nice 19 is our priority
    CHECK(threads_beside(2, 0, no_group, 10, false, cores) == cores - 2);   // more important than us: counts fully
}

// What no listed process accounts for counts fully, as the machine's busy time: a process whose stat
// cannot be read, one that ended within the window, and all of them where PROC/PID cannot be listed.
static void test_unlisted_time_counts_fully(void) {
    write_autogroups(NULL);
    const int cores = test_cores();
    clear_root();
    write_machine(50, 70);
    write_process(4000, 10, 19);
    sample(&from, NULL, 100, 0);
    write_machine(50, 71);
    char path[128];
    snprintf(path, sizeof path, "%s/4000/stat", root);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) fclose(f);   // empty: unreadable
    sample(&to, &from, 101, 0);
    CHECK(to.n_procs == 0);
    CHECK(threads_adapt(&from, &to, cores, THREADS_ADAPT_WINDOW) == cores - 1);
    from.n_procs = -1;   // as where /proc/PID cannot be listed
    write_process(4000, 11, 19);
    sample(&to, &from, 101, 0);
    CHECK(to.n_procs == 1);
    CHECK(threads_adapt(&from, &to, cores, THREADS_ADAPT_WINDOW) == cores - 1);
    // No PROC/stat: no advice.
    snprintf(path, sizeof path, "%s/nothere", root);
    threads_load_sample(&to, &from, path);
    CHECK(!to.valid && to.n_procs == -1);
    CHECK(threads_adapt(&from, &to, cores, THREADS_ADAPT_WINDOW) == 0);
}

// With autogroup scheduling on, a process in another autogroup than ours counts by the autogroups' nice
// values, one in ours by task nice; a busy process whose autogroup cannot be read counts fully.
static void test_autogroups(void) {
    const int cores = test_cores();
    const threads_group ours = {100, 0}, other = {200, 0}, other_niced = {200, 19}, none = {0, 0};
    write_autogroups("1");
    write_group("self", ours);
    CHECK(threads_beside(1, 19, other, 0, false, cores) == cores - 1);     // a `setsid nice -n 19` job
    CHECK(threads_beside(1, 19, other, 0, true, cores) == cores - 1);      // the same, new in the window
    CHECK(threads_beside(10, 10, other, 0, false, cores) == cores - 10);
    CHECK(threads_beside(1, 19, other_niced, 0, false, cores) == cores);   // its autogroup at nice 19
    CHECK(threads_beside(60, 0, other_niced, 0, false, cores) == cores - 2);   // 0.029 each: 1.73 cores
    CHECK(threads_beside(1, 19, ours, 0, false, cores) == cores);          // in ours: by task nice
    CHECK(threads_beside(10, 10, ours, 0, false, cores) == cores - 2);
    CHECK(threads_beside(1, 0, ours, 0, false, cores) == cores - 1);
    CHECK(threads_beside(1, 19, none, 0, false, cores) == cores);   // in none: its nice against our autogroup's
    CHECK(threads_beside(1, 19, no_group, 0, false, cores) == cores - 1);   // unreadable: counts fully
    // Our autogroup at nice 10: a nice-10 process in another autogroup at nice 10 is our equal.
    write_group("self", (threads_group){100, 10});
    CHECK(threads_beside(1, 10, (threads_group){200, 10}, 0, false, cores) == cores - 1);
    CHECK(threads_beside(1, 10, none, 0, false, cores) == cores - 1);
    CHECK(threads_beside(10, 0, (threads_group){200, 19}, 0, false, cores) == cores - 2);   // 0.24 each
    write_group("self", ours);
    // Autogroup scheduling off: task nice alone.
    write_autogroups("0");
    CHECK(threads_beside(1, 19, other, 0, false, cores) == cores);
    CHECK(threads_beside(10, 10, other, 0, false, cores) == cores - 2);
    CHECK(!to.autogroups && to.procs[0].group.id == -1);
    // Only processes that used CPU in the window have their autogroup read; the first sample reads none.
    write_autogroups("1");
    CHECK(threads_beside(1, 0, other, 0, false, cores) == cores - 1);
    write_process(3999, 5, 0);   // idle in both samples
    write_group("3999", other);
    sample(&from, NULL, 100, 0);
    CHECK(from.n_procs == 2 && from.procs[0].group.id == -1 && from.procs[1].group.id == -1);
    write_process(4000, 12, 0);
    sample(&to, &from, 101, 0);
    CHECK(to.autogroups && to.group.id == 100 && to.group.nice == 0);
    CHECK(to.n_procs == 2 && to.procs[0].pid == 3999 && to.procs[0].group.id == -1);
    CHECK(to.procs[1].pid == 4000 && to.procs[1].group.id == 200 && to.procs[1].group.nice == 0);
    write_autogroups(NULL);
}

// On the real /proc: this process is left out, and every process listed has CPU time and a nice value.
static void test_real_proc(void) {
    threads_load_sample(&from, NULL, "/proc");
    threads_load_sample(&to, &from, "/proc");
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
    CHECK(!to.autogroups || to.group.id >= 0);   // ours is readable
}

int main(void) {
    hz = sysconf(_SC_CLK_TCK);
    root = testlib_scratch_dir("threads");
    TEST_RUN(test_niced_processes_count_by_their_share);
    TEST_RUN(test_unlisted_time_counts_fully);
    TEST_RUN(test_autogroups);
    TEST_RUN(test_real_proc);
    return testlib_finish("threads");
}
