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
