#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

// Reads up to size - 1 bytes of a small file (PATH, relative to the directory `dir` or absolute) into buf,
// NUL-terminated; returns their count, -1 where the file cannot be read.
static ssize_t read_small(int dir, const char *path, char *buf, size_t size) {
    int fd = openat(dir, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n >= 0) buf[n] = 0;
    return n;
}

// Reads another process's CPU time and nice from its stat file (DIR/NAME/stat); false if it cannot (it
// may have exited since the listing). Its autogroup is left unread.
static bool read_proc(int dir, const char *name, long hz, threads_proc *p) {
    char path[sizeof ((struct dirent *)0)->d_name + sizeof "/stat"], line[1024];   // name is a d_name
    snprintf(path, sizeof path, "%s/stat", name);
    if (read_small(dir, path, line, sizeof line) <= 0) return false;
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime
    // cstime priority nice ...: comm may hold spaces and ')', so the fields are counted from the last ')'.
    const char *fields = strrchr(line, ')');
    unsigned long long utime, stime;
    if (!fields || sscanf(fields + 1, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu %*s %*s %*s %d",
                          &utime, &stime, &p->nice) != 3)
        return false;
    p->pid = atoi(name);
    p->cpu = (double)(utime + stime) / (double)hz;
    p->group = (threads_group){.id = -1};
    return true;
}

// Reads PROC/NAME/autogroup ("/autogroup-ID nice N"; empty for a process in no autogroup) into *g: id -1
// where it cannot.
static void read_group(const char *proc, const char *name, threads_group *g) {
    char path[4096], line[128];
    snprintf(path, sizeof path, "%s/%s/autogroup", proc, name);
    *g = (threads_group){.id = -1};
    ssize_t n = read_small(AT_FDCWD, path, line, sizeof line);
    if (n == 0) g->id = 0;
    else if (n < 0 || sscanf(line, "/autogroup-%ld nice %d", &g->id, &g->nice) != 2 || g->id <= 0) g->id = -1;
}

static int by_pid(const void *a, const void *b) {
    int x = ((const threads_proc *)a)->pid, y = ((const threads_proc *)b)->pid;
    return (x > y) - (x < y);
}

// The seconds of CPU time p used since the sample `from`: all its time where `from` does not list it (it
// started in between). *i is a cursor into from->procs: start it at 0 and call in increasing pid order.
static double cpu_since(const threads_load *from, int *i, const threads_proc *p) {
    while (*i < from->n_procs && from->procs[*i].pid < p->pid) ++*i;
    bool seen = *i < from->n_procs && from->procs[*i].pid == p->pid && from->procs[*i].cpu <= p->cpu;
    return p->cpu - (seen ? from->procs[*i].cpu : 0);
}

// Lists every process under `proc` but this one into l->procs (n_procs -1 where it cannot).
static void list_procs(threads_load *l, const char *proc, long hz) {
    l->n_procs = -1;
    DIR *d = opendir(proc);
    if (!d) return;
    int n = 0;
    const int self = (int)getpid();
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strspn(e->d_name, "0123456789") != strlen(e->d_name) || atoi(e->d_name) == self) continue;
        if (n == THREADS_PROCS_MAX) { closedir(d); return; }   // too many to tell apart
        if (read_proc(dirfd(d), e->d_name, hz, &l->procs[n])) n++;
    }
    closedir(d);
    qsort(l->procs, (size_t)n, sizeof l->procs[0], by_pid);
    l->n_procs = n;
}

// Reads the autogroup of every process in l whose CPU time grew since `since` (where autogroups are on and
// both samples list the processes): only those can count in the window from `since` to l, so the others'
// files are not opened.
static void read_groups(threads_load *l, const threads_load *since, const char *proc) {
    if (!l->autogroups || !since || since->n_procs < 0) return;
    int i = 0;
    for (int j = 0; j < l->n_procs; j++) {
        threads_proc *p = &l->procs[j];
        if (cpu_since(since, &i, p) <= 0) continue;
        char name[16];
        snprintf(name, sizeof name, "%d", p->pid);
        read_group(proc, name, &p->group);
    }
}

// Whether autogroup scheduling is on: PROC/sys/kernel/sched_autogroup_enabled reads 1 (absent where the
// kernel has no autogroups).
static bool autogroups_on(const char *proc) {
    char path[4096], line[16];
    snprintf(path, sizeof path, "%s/sys/kernel/sched_autogroup_enabled", proc);
    return read_small(AT_FDCWD, path, line, sizeof line) > 0 && atoi(line) == 1;
}

void threads_load_sample(threads_load *l, const threads_load *since, const char *proc) {
    l->wall = clock_s(CLOCK_MONOTONIC);
    l->own = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    l->busy = 0;
    l->valid = false;
    l->n_procs = -1;
    errno = 0;
    l->nice = getpriority(PRIO_PROCESS, 0);   // -1 is a nice value: only errno tells a failure
    if (errno) l->nice = 0;
    l->autogroups = autogroups_on(proc);
    l->group = (threads_group){.id = -1};
    if (l->autogroups) read_group(proc, "self", &l->group);
    const long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0) return;
    list_procs(l, proc, hz);
    read_groups(l, since, proc);
    char path[4096];
    snprintf(path, sizeof path, "%s/stat", proc);
    FILE *f = fopen(path, "r");
    if (!f) return;
    // cpu  user nice system idle iowait irq softirq steal ... (in clock ticks, all CPUs together)
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                   &v[6], &v[7]);
    fclose(f);
    if (n < 4) return;
    unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    l->busy = (double)busy / (double)hz;
    l->valid = true;
}

// The kernel's CFS weights of nice -20 to 19 (sched_prio_to_weight): threads sharing a core get CPU time in
// proportion to their weights.
static const int cfs_weight[40] = {
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906,  3121,  2501,  1991,  1586,  1277,  1024,  820,   655,   526,   423,   335,  272,  215,
    172,   137,   110,   87,    70,    56,    45,    36,    29,    23,    18,    15,
};
static double nice_weight(int nice) { return cfs_weight[(nice < -20 ? -20 : nice > 19 ? 19 : nice) + 20]; }

// The part of another process's CPU time that counts as cores taken from us. Sharing a core with one of our
// threads it would keep w/(w + w_ours) of the core: half at equal priority, which counts fully (a busy core
// is a taken core, as without nice). So the part is twice that share, at most 1: a process at nice 19
// against our nice 0 keeps 1.4% of the core and counts 0.03, one at nice 10 counts 0.19, nice 1 0.89.
static double taken_part(int nice, int our_nice) {
    double w = nice_weight(nice), part = 2 * w / (w + nice_weight(our_nice));
    return part < 1 ? part : 1;
}

// The nice a process competes with against processes outside its autogroup: its autogroup's, or its own
// where it is in none (then it competes as a task beside the autogroups).
static int outer_nice(threads_group g, int nice) { return g.id > 0 ? g.nice : nice; }

// The part of p's CPU time that counts as taken from us, in a window ending at `to`. With autogroup
// scheduling on, CFS shares a core between autogroups by their nice first and by task nice only within an
// autogroup: a `setsid nice -n 19` job in its own session at autogroup nice 0 takes as much as one of our
// threads. A process whose autogroup (or ours) is unknown counts fully, as without nice. (CFS splits an
// autogroup's weight between the cores it runs on, so beside T of our threads a niced autogroup keeps up to
// T times the share assumed here (at nice 19 beside two: 2.8% of a core, not 1.4%); an estimate.)
static double proc_part(const threads_proc *p, const threads_load *to) {
    if (!to->autogroups) return taken_part(p->nice, to->nice);
    if (p->group.id < 0 || to->group.id < 0) return 1;
    if (p->group.id == to->group.id) return taken_part(p->nice, to->nice);
    return taken_part(outer_nice(p->group, p->nice), outer_nice(to->group, to->nice));
}

// The seconds of other processes' CPU time between two samples that do not count as taken from us (the
// rest of each niced process's time): 0 unless both samples list the processes. A process that ended in
// between is not listed in `to`, and its last time counts fully, as the machine's busy time.
static double untaken_cpu(const threads_load *from, const threads_load *to) {
    if (from->n_procs < 0 || to->n_procs < 0) return 0;
    double untaken = 0;
    int i = 0;
    for (int j = 0; j < to->n_procs; j++)
        untaken += (1 - proc_part(&to->procs[j], to)) * cpu_since(from, &i, &to->procs[j]);
    return untaken;
}

int threads_adapt(const threads_load *from, const threads_load *to, int cores, double min_window) {
    double window = to->wall - from->wall;
    if (cores < sysconf(_SC_NPROCESSORS_ONLN)) return 0;   // bound to some CPUs: /proc/stat counts them all
    if (!from->valid || !to->valid || window < min_window || window <= 0) return 0;
    double others = (to->busy - from->busy - (to->own - from->own) - untaken_cpu(from, to)) / window;   // in cores
    int t = cores - (int)lround(others > 0 ? others : 0);
    return t < 1 ? 1 : t > cores ? cores : t;
}

flag_def threads_flag(long *threads) {
    return (flag_def){"threads", FLAG_INT, threads, "0",
                      "OpenMP threads (0: the cores other processes leave free, rechecked as it runs)"};
}

// What threads_start set: whether threads_recheck follows the load, and the samples it measures between
// (static: each holds a table of processes).
static bool follow;
static threads_load samples[2], *last = &samples[0], *next = &samples[1];

sx_status threads_start(long n, int share, const char *note_cmd) {
    if (n < 0 || n > THREADS_MAX)
        return sx_fail(SX_ERR_ARG, "--threads must be 0 (the cores other processes leave free) or a thread count "
                       "from 1 to %d, not %ld", THREADS_MAX, n);
    if (n > 0) omp_set_num_threads((int)n);
    else if (share > 0) omp_set_num_threads(share);
    follow = n == 0 && share <= 0 && !getenv("OMP_NUM_THREADS");
    if (follow) threads_load_sample(last, NULL, "/proc");
    // More threads than cores only makes them wait for each other (every product splits its work evenly).
    const int cores = threads_cores();
    if (n > cores && note_cmd)
        fprintf(stderr, "sextant %s: note: --threads %ld is more than the %d cores this process may use: "
                        "expect it to run slower than with %d\n", note_cmd, n, cores, cores);
    return SX_OK;
}

void threads_recheck(void) {
    if (!follow || omp_in_parallel() || clock_s(CLOCK_MONOTONIC) - last->wall < THREADS_ADAPT_WINDOW) return;
    threads_load_sample(next, last, "/proc");
    int t = threads_adapt(last, next, threads_cores(), THREADS_ADAPT_WINDOW);
    if (t && t != omp_get_max_threads()) omp_set_num_threads(t);
    // The next window starts now, advice or not: a sample that gives none (bound to some CPUs, no /proc)
    // is taken once a window, not at every step.
    threads_load *taken = last;
    last = next;
    next = taken;
}
