// threads: how sextant's OpenMP threads behave on a machine shared with other work. Its parts:
//  - the wait policy: idle OpenMP threads spin briefly, then sleep. libgomp's default spins 300,000 rounds
//    (about a millisecond) at every barrier, which starves a thread that shares its core with another
//    process and makes a training run several times slower as soon as one other core is busy; sleeping at
//    once (OMP_WAIT_POLICY=passive) costs 7-8% on an idle machine, where most barriers last microseconds.
//    THREADS_SPINCOUNT rounds (tens of microseconds) keep the idle speed and the loaded one (bench/loaded.sh).
//    libgomp reads the policy from the environment once, before main, so threads_wait_policy_setup
//    re-executes the binary with GOMP_SPINCOUNT set, unless the user chose a policy (OMP_WAIT_POLICY or
//    GOMP_SPINCOUNT).
//  - the default thread count: threads_load follows the machine's busy time (/proc/stat) minus this
//    process's own CPU time, and each other process's CPU time and nice (/proc/PID/stat) and, with
//    autogroup scheduling on, its autogroup (/proc/PID/autogroup); threads_adapt turns that into "the cores
//    other processes leave free", a niced process counting by the share of a core it would keep against one
//    of our threads. Not considered: cgroup CPU weights (cpu.weight of systemd slices with the cpu
//    controller, which also take a process out of autogroup scheduling).
//  - threads_split: whether a loop should open an OpenMP region at all.
//  - the --threads flag of every command that computes (train, eval, sample): its table row, its check, and
//    the policy it sets (threads_start, threads_recheck).
// Not responsible for how work is split between threads (the kernels do that).
#ifndef SEXTANT_CORE_THREADS_H
#define SEXTANT_CORE_THREADS_H
#include <omp.h>
#include <stdbool.h>
#include "core/flags.h"

#define THREADS_SPINCOUNT "30000"
#define THREADS_ADAPT_WINDOW 0.5   // seconds between two looks at the machine's load (--threads 0)
#define THREADS_MAX 1024           // the most --threads accepts (a typo's 100000 threads would exhaust memory)

// Whether a loop that is `big` enough to split should open an OpenMP region: only when the region would run
// more than one thread. libgomp ends every region, one-thread ones too, with a futex wake (a system call):
// the per-row loops of decoding (one token, tiny rows) paid it a dozen times per token. A loop that does not
// open a region runs its iterations in order on the calling thread, as a one-thread region does.
static inline bool threads_split(bool big) { return big && !omp_in_parallel() && omp_get_max_threads() > 1; }

// Re-executes /proc/self/exe with argv and the wait policy in the environment when neither
// OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set; returns (doing nothing) when one is set, or when the
// re-execution fails. Call first thing in main, before any OpenMP call and before other threads exist.
void threads_wait_policy_setup(char **argv);

// The cores this process may run on (its affinity mask, else the online CPUs).
int threads_cores(void);
// The most threads this process may run: its cores or OpenMP's maximum now, whichever is more (train
// --threads 0 follows the free cores up to all of them). Kernels' workspaces are sized for this many.
int threads_most(void);

#define THREADS_PROCS_MAX 4096     // other processes a load sample tells apart; with more, only the total counts

// A process's autogroup. With autogroup scheduling on (by default on Debian's kernels), each session
// (setsid) is an autogroup, and CFS shares a core between autogroups by the autogroup's nice (settable by
// writing to /proc/PID/autogroup) before it shares an autogroup's part by task nice; a process in none
// (init, kernel threads) competes by its own nice beside the autogroups.
typedef struct {
    long id;    // N of "/autogroup-N"; 0 in none; -1 not read (or unreadable)
    int nice;   // the autogroup's nice
} threads_group;

// Another process in a load sample.
typedef struct {
    int pid, nice;
    double cpu;            // seconds of CPU time so far (utime + stime, all its threads)
    threads_group group;   // read only where threads_load_sample says
} threads_proc;

// The load on the machine at one moment; two samples give the load between them.
typedef struct {
    double wall, busy, own;   // seconds: monotonic clock, all CPUs' busy time, this process's CPU time
    bool valid;               // busy was read
    int nice;                 // this process's nice value
    bool autogroups;          // autogroup scheduling is on (PROC/sys/kernel/sched_autogroup_enabled is 1)
    threads_group group;      // this process's autogroup (read where autogroups is true)
    int n_procs;              // the other processes in procs (sorted by pid); -1 where they could not be
                              // listed (no /proc/PID, or more than THREADS_PROCS_MAX)
    threads_proc procs[THREADS_PROCS_MAX];
} threads_load;

// Overwrites *l with a sample taken now from the proc tree at `proc` ("/proc"; a test's fake tree):
// PROC/stat and every PROC/PID/stat but this process's; with autogroups on, also PROC/self/autogroup and the
// PROC/PID/autogroup of each process whose CPU time grew since the sample `since` (NULL: none), the only
// ones that count in a window from `since`. valid is false where PROC/stat cannot be read.
// Cost, on the 2-core development machine loaded (load average 8): about 13 microseconds of CPU time per
// process, 1.44 ms of CPU and 2.6 ms of wall time with 106 other processes, of which the autogroup files
// (6.6 per sample, 0.5 s after the last) take 0.07 ms; so the recheck's one sample per THREADS_ADAPT_WINDOW
// costs about 0.3% of a core. (Measured at load average 6 without autogroups: 0.93 ms for 98 processes.)
void threads_load_sample(threads_load *l, const threads_load *since, const char *proc);
// The thread count that leaves the cores busy with other processes' work alone, from two samples at least
// min_window seconds apart (`to` taken since `from`): cores - round(others' busy cores), between 1 and
// cores, where a process at a higher nice than ours counts by the share of a core it would keep against one
// of our threads (nice 19 against nice 0: 0.03 of its CPU time). With autogroups on, a process in another
// autogroup than ours counts by the autogroups' nice values instead (a nice-19 job in its own session at
// autogroup nice 0 counts fully); CPU time no listed process accounts for, and a process whose autogroup
// could not be read, count fully. Returns 0 (no advice) when the window is shorter, a sample is invalid, or
// the process is bound to fewer than all CPUs.
int threads_adapt(const threads_load *from, const threads_load *to, int cores, double min_window);

// The --threads row of a command's flag table, the same for every command: N threads, or 0 (the default)
// for the cores other processes leave free, rechecked as the command runs.
flag_def threads_flag(long *threads);

// Applies --threads to this process (OpenMP's thread count is the process's): n > 0 runs n threads (with a
// note on stderr, when more than the cores, if note_cmd names the command: "sextant NOTE_CMD: note: ...");
// n = 0 runs `share` threads when share > 0 (train under mpirun: the cores per rank), else follows the free
// cores (threads_recheck) unless OMP_NUM_THREADS fixes the count. SX_ERR_ARG, with the flag's meaning, when n
// is below 0 or above THREADS_MAX.
sx_status threads_start(long n, int share, const char *note_cmd);
// After threads_start(0, 0, ...), when THREADS_ADAPT_WINDOW seconds have passed since the last look: as many
// threads as the cores other processes leave free. Does nothing otherwise (no threads_start: a test, or a
// command without --threads) and inside a parallel region. Cheap between looks (one clock read), so the loops
// of training, evaluation and decoding call it per step or token.
void threads_recheck(void);

#endif
