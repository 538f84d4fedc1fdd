/*
 * The transport interface the schedule engine runs on: tagged, nonblocking
 * point-to-point to a peer rank of one group. Two implementations: the UCX
 * one (ucx_glue/) and the in-process simulator (tests/sim/).
 *
 * Contract:
 *  - isend/irecv either fail at once (return an error; no callback ever) or
 *    return DPC_OK and call cb exactly once later, from progress() or
 *    cancel(), never from inside isend/irecv themselves.
 *  - The buffer of a send must not change, and that of a recv must not be
 *    read, until cb is called.
 *  - A message matches a receive by (peer, tag), all 64 bits of the tag.
 *  - cancel() asks for early completion; cb still comes exactly once, with
 *    DPC_ERR_CANCELED or with the real status if the operation had finished.
 *  - now_ns() is the clock timeouts are measured on (the simulator's is
 *    virtual); idle_wait() blocks or yields until something may have
 *    happened, at most max_ns: nothing spins a core.
 */
#ifndef DPC_TRANSPORT_H
#define DPC_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include "dpc_status.h"
#include "dpc_types.h"

typedef struct dpc_transport dpc_transport_t;
typedef struct dpc_xfer dpc_xfer_t; /* opaque, owned by the transport */
typedef void (*dpc_xfer_cb_t)(void *arg, dpc_status_t status);

typedef struct dpc_transport_ops {
    dpc_status_t (*isend)(dpc_transport_t *tp, int peer, uint64_t tag, const void *buf,
                          size_t len, dpc_memtype_t mem, dpc_xfer_cb_t cb, void *arg,
                          dpc_xfer_t **xfer_p);
    dpc_status_t (*irecv)(dpc_transport_t *tp, int peer, uint64_t tag, void *buf,
                          size_t len, dpc_memtype_t mem, dpc_xfer_cb_t cb, void *arg,
                          dpc_xfer_t **xfer_p);
    int (*progress)(dpc_transport_t *tp);   /* returns completions made */
    void (*cancel)(dpc_transport_t *tp, dpc_xfer_t *xfer);
    uint64_t (*now_ns)(dpc_transport_t *tp);
    void (*idle_wait)(dpc_transport_t *tp, uint64_t max_ns);
} dpc_transport_ops_t;

struct dpc_transport {
    const dpc_transport_ops_t *ops;
    int rank;   /* this endpoint's rank in the group */
    int size;   /* group size */
};

#endif
