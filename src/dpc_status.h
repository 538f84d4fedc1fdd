/* One status type for the whole library. UCX and CUDA codes are converted at
 * the edge (ucx_glue/, the CUDA files); the MPI shim turns these into MPI error
 * classes. */
#ifndef DPC_STATUS_H
#define DPC_STATUS_H

typedef enum {
    DPC_OK = 0,
    DPC_INPROGRESS = 1,       /* not an error: the operation is still running */
    DPC_ERR_NOMEM = -1,
    DPC_ERR_ARG = -2,         /* an argument is invalid (caller's fault) */
    DPC_ERR_UNSUPPORTED = -3, /* valid, but this algorithm/type/op cannot do it */
    DPC_ERR_TRANSPORT = -4,   /* a send or receive failed */
    DPC_ERR_PEER_LOST = -5,   /* a peer became unreachable */
    DPC_ERR_TIMEOUT = -6,     /* waited longer than the configured timeout */
    DPC_ERR_CANCELED = -7,    /* cancelled because something else failed */
    DPC_ERR_TRUNCATE = -8,    /* a message was larger than its receive buffer */
    DPC_ERR_STATE = -9        /* call made in the wrong state (e.g. start twice) */
} dpc_status_t;

const char *dpc_status_str(dpc_status_t st);

#endif
