/* Device to device through CUDA IPC (ipc.c). */
#ifndef DPC_IPC_H
#define DPC_IPC_H

#include "shim.h"

/* One blocking collective, every rank's buffers at their data's first byte
 * (true_lb applied). Blocks: allgather, alltoall and reduce_scatter_block
 * move blk_bytes per rank; bcast moves blk_bytes; allreduce count elements
 * of dt (blk_bytes unused); allgatherv and alltoallv counts/displs. */
typedef struct dpc_ipc_call {
    MPI_Comm comm;
    const char *call;
    dpc_coll_t coll;
    const void *sbuf;    /* NULL: in place (and bcast) */
    void *rbuf;
    size_t blk_bytes;
    size_t count;        /* allreduce */
    dpc_dtype_t dt;      /* reductions */
    dpc_op_t op;
    int root;            /* bcast */
    /* allgatherv, alltoallv: each rank's block in the output (counts of
     * elem bytes at displs), and for alltoallv where each peer's block
     * starts in the input (sdispls, of selem bytes) */
    const int *counts, *displs, *sdispls;
    size_t elem, selem;
    bool local_ok;       /* this rank's own conditions hold (contiguous types, a
                            device kernel for the reduction...); its buffers'
                            memory is checked here */
} dpc_ipc_call_t;

/* Whether to try (then every rank of the communicator must call
 * dpc_ipc_run): from what all ranks share alone, the outcomes of earlier
 * attempts on the communicator included (see ipc.c). */
#define DPC_IPC_BACKOFF_MAX 64
bool dpc_ipc_wanted(MPI_Comm comm, const char *call, dpc_coll_t coll, int comm_size,
                    size_t bytes);
/* Collective. 1: the call ran here, its MPI error code in *err; 0: it did
 * not (on every rank alike): go the usual way. */
int dpc_ipc_run(const dpc_ipc_call_t *x, int *err);
void dpc_ipc_fini(void);

#endif
