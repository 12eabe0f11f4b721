// dist: the process group of a multi-process (MPI) run — which rank this process is, how many there are,
// and the few collectives data-parallel training needs (a bucketed in-place all-reduce, a broadcast, a
// barrier, agreeing on an error, checking that a buffer is identical everywhere). Every collective waits
// at most dist_timeout() seconds and then fails with a message naming the collective, so a rank that died
// or hangs stops the others instead of blocking them forever.
// Built with -DSEXTANT_MPI (the Makefile does so when mpicc is found) it uses MPI; without, every function
// is the single-process version (rank 0 of 1, collectives are no-ops) and dist_init refuses to start under
// mpirun with a hint to rebuild. Not responsible for what is reduced (train/train.c, scale/ladder.c) nor
// for launching processes (mpirun, or a batch system).
// Environment: SEXTANT_DIST_TIMEOUT=seconds (default 600; 0 waits forever).
#ifndef SEXTANT_DIST_DIST_H
#define SEXTANT_DIST_DIST_H
#include <stdbool.h>
#include <stddef.h>
#include "core/status.h"

// Joins the process group when the process was started by an MPI launcher (mpirun/srun set
// OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK); otherwise a group of one. Call once, before anything else
// of this module; pair with dist_finalize.
sx_status dist_init(void);
// Leaves the group: waits (without timeout) for every rank to get here, then MPI_Finalize. After a
// collective failed or timed out it aborts the whole job instead (MPI_Abort), since the others cannot
// finish. No-op in a group of one.
void dist_finalize(void);

int dist_rank(void);
int dist_size(void);
// Ranks on this machine (shared memory), 1 without MPI.
int dist_local_size(void);
// CPU cores this rank should use: its affinity mask if the launcher bound it to fewer cores than the
// machine has, else the machine's cores shared evenly by the ranks on it (at least 1).
int dist_cores_per_rank(void);
// Seconds a collective waits for the other ranks before failing (SEXTANT_DIST_TIMEOUT; 0 = forever).
double dist_timeout(void);

// x (n floats) <- the element-wise sum over ranks, in place, in buckets of at most DIST_BUCKET floats
// all in flight together. Every rank gets the same bits.
#define DIST_BUCKET ((size_t)1 << 22)
sx_status dist_allreduce_sum(float *x, size_t n);
// The same for a few doubles (losses, counters).
sx_status dist_allreduce_sum_f64(double *x, size_t n);
// Collectives in flight: sums started one by one (as their inputs become final) and waited for together,
// so that the communication overlaps whatever the caller computes in between. Each started sum is split like
// dist_allreduce_sum's, so at any P the bits equal dist_allreduce_sum's on the same floats when the pieces
// match, and at P = 2 always (a + b is exact to commute).
typedef struct dist_flight dist_flight;
// A flight for at most max_sums started sums (each of at most DIST_BUCKET floats; longer ones count as
// several). NULL when out of memory (sx_alloc said what).
dist_flight *dist_flight_new(size_t max_sums);
void dist_flight_free(dist_flight *f);
// Starts x (n floats) <- the element-wise sum over ranks, in place; x must not be touched until
// dist_flight_wait returns. An error (it could not start) is also returned by the next dist_flight_wait.
sx_status dist_flight_allreduce(dist_flight *f, float *x, size_t n);
// Lets MPI move the started sums on without waiting (MPI progresses non-blocking collectives only inside
// its calls); returns how many of the flight's floats are summed so far.
size_t dist_flight_poke(dist_flight *f);
// Waits (at most dist_timeout()) for every started sum, then empties the flight for the next step.
sx_status dist_flight_wait(dist_flight *f);

// Sharded state (ZeRO-1): rank r owns x[offsets[r], offsets[r+1]) of an array of offsets[P] floats.
// In place: every rank's x <- every owner's range.
sx_status dist_allgather_ranges(float *x, const size_t *offsets);
// root's all (offsets[P] floats) <- mine (offsets[r+1] - offsets[r] floats) of every rank r; all is only
// read on root (may be NULL elsewhere).
sx_status dist_gather_ranges(const float *mine, float *all, const size_t *offsets, int root);
// The reverse: mine of every rank r <- root's all[offsets[r], offsets[r+1]).
sx_status dist_scatter_ranges(const float *all, float *mine, const size_t *offsets, int root);
// buf (bytes) on every rank <- root's buf.
sx_status dist_broadcast(void *buf, size_t bytes, int root);
// Collective: if st is an error on any rank, every rank returns an error — the failing rank its own, the
// others SX_ERR_* of the first failing rank with "rank K failed: <its message>". SX_OK everywhere otherwise.
sx_status dist_agree(sx_status st);
// Collective: SX_ERR_MISMATCH unless buf (bytes) has the same content (crc32) on every rank.
sx_status dist_check_identical(const void *buf, size_t bytes, const char *what);
// Seconds this process has spent inside collectives so far (for overhead measurements).
double dist_comm_seconds(void);
// Removes the launcher's variables (OMPI_*, PMIX_*, PMI_*) from this process's environment, so that a
// program it executes (a ladder's `sextant train`, in a forked child) runs as a process of its own.
void dist_forget_launcher(void);

#endif
