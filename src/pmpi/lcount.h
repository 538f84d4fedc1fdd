/*
 * MPI-4's large-count forms of the intercepted collectives (MPI_Allreduce_c,
 * MPI_Iallgatherv_c, MPI_Alltoallv_init_c ...): counts as MPI_Count and
 * displacements as MPI_Aint. Programs call them without knowing it: mpi4py 4
 * built against an MPI-4 library (MPICH 4) calls only these for its buffer
 * collectives. A call whose every count and displacement fits an int runs
 * exactly as the int form does; one that does not goes to the MPI library's
 * own _c form (DPCOLL_STATS: "count beyond int") when every rank takes the
 * same way: when the values beyond int are ones that MPI makes every rank
 * pass alike (an allreduce's count, the recvcounts of an allgatherv or a
 * reduce-scatter; the counts of an allgather, bcast or alltoall, for ranks
 * that use the same datatypes). Values that each rank chooses for itself
 * (an allgatherv's or alltoallv's displacements, an alltoallv's counts)
 * cannot decide that (the others would not know): beyond an int they are
 * refused (MPI_ERR_COUNT, naming the argument) before anything is sent, and
 * the other ranks end at DPCOLL_TIMEOUT naming this one.
 *
 * Arrays are converted to ints. The int forms' jobs keep pointers to their
 * count arrays until the request is freed, so a nonblocking or persistent
 * job adopts the converted arrays (dpc_tl_adopt, taken by dpc_run); and a
 * nonblocking or persistent reduce-scatter that the int form hands to the
 * MPI library uses the caller's own counts there (dpc_tl_lc), which live as
 * long as the request, as MPI requires.
 */
#ifndef DPC_LCOUNT_H
#define DPC_LCOUNT_H

#include "shim.h"
#include <limits.h>

/* The caller's recvcounts of the large-count reduce-scatter in progress on
 * this thread (NULL: none). Only the reduce-scatter can be handed to the
 * MPI library after dpc_enter (an op or type that is not ours); the
 * data-moving collectives never are, and their _c forms call the MPI
 * library's _c form themselves when dpc_enter says so. */
extern DPC_TLS const MPI_Count *dpc_tl_lc;
/* Memory the next nonblocking or persistent job made on this thread takes
 * over (freed with it); dpc_run sets it to NULL when it does. */
extern DPC_TLS void *dpc_tl_adopt;

static inline bool dpc_lc_fits(MPI_Count c)
{
    return c >= INT_MIN && c <= INT_MAX;
}

/* Up to four arrays of n counts (MPI_Count) or displacements (MPI_Aint)
 * as ints, in one allocation (*mem: free it, or hand it to dpc_tl_adopt):
 * out[k] is NULL where in[k] is. 0: done; 1 + k: a value of in[k] does not
 * fit an int (nothing allocated); -1: out of memory. */
typedef struct dpc_lc_array {
    const MPI_Count *counts;    /* one of the two, or neither */
    const MPI_Aint *displs;
} dpc_lc_array_t;
int dpc_lc_convert(int n, const dpc_lc_array_t in[4], int *out[4], void **mem);

/* A large-count call's start: dpc_enter, then its arrays (in[], of the
 * communicator's size each) as ints. -1: an error (raised; *err); 0: the
 * MPI library's own _c call (dpc_enter said so, or a shared value beyond an
 * int, counted); 1: go on with the int form, ic and *mem set. A per-rank
 * value beyond an int (in[k] with local[k]) is refused here. */
int dpc_lc_enter(MPI_Comm comm, dpc_coll_t coll, const char *call, dpc_mode_t mode,
                 const dpc_lc_array_t in[4], const bool local[4], const char *const names[4],
                 int *ic[4], void **mem, int *err);

/* Counts the call as the MPI library's (count beyond int). */
void dpc_lc_note_pmpi(dpc_coll_t coll);
/* Refuses a per-rank value beyond an int (see the top). */
int dpc_lc_refuse(MPI_Comm comm, const char *call, const char *arg);

/* Runs an int form under a large-count call's context: *ints (may be
 * NULL) is adopted by a job that needs it past the call, else freed. */
#define DPC_LC_RUN(lc, ints, expr)                 \
    ({                                             \
        dpc_tl_lc = (lc);                          \
        dpc_tl_adopt = (ints);                     \
        int rc_ = (expr);                          \
        free(dpc_tl_adopt);                        \
        dpc_tl_adopt = NULL;                       \
        dpc_tl_lc = NULL;                          \
        rc_;                                       \
    })

#endif
