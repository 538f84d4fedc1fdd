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
 *
 * One-sided access (optional: all six are NULL when a transport has none):
 *  - expose() makes [buf, buf+len) readable by the group's peers and writes
 *    a descriptor of it (at most DPC_REGION_DESC_MAX bytes) to send them;
 *    unexpose() ends that. The owner keeps the region exposed, unchanged,
 *    until every peer has said it has finished reading (the algorithm's
 *    business: a message after the reads).
 *  - import() turns a peer's descriptor into a handle for iget();
 *    unimport() frees it.
 *  - iget() reads len bytes at `offset` into the peer's region into buf;
 *    cb comes exactly once, as for isend/irecv, and then buf holds the data.
 *  - iput() writes len bytes from buf at `offset` into the peer's region;
 *    when cb comes the data are in the peer's memory (a message sent after
 *    it tells the peer so).
 */
#ifndef DPC_TRANSPORT_H
#define DPC_TRANSPORT_H

#include <stdbool.h>
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
    dpc_status_t (*expose)(dpc_transport_t *tp, void *buf, size_t len, dpc_memtype_t mem,
                           void *desc, void **handle_p);
    void (*unexpose)(dpc_transport_t *tp, void *handle);
    dpc_status_t (*import)(dpc_transport_t *tp, int peer, const void *desc, void **remote_p);
    void (*unimport)(dpc_transport_t *tp, void *remote);
    dpc_status_t (*iget)(dpc_transport_t *tp, int peer, void *remote, size_t offset, void *buf,
                         size_t len, dpc_memtype_t mem, dpc_xfer_cb_t cb, void *arg,
                         dpc_xfer_t **xfer_p);
    dpc_status_t (*iput)(dpc_transport_t *tp, int peer, void *remote, size_t offset,
                         const void *buf, size_t len, dpc_memtype_t mem, dpc_xfer_cb_t cb,
                         void *arg, dpc_xfer_t **xfer_p);
    /* Optional: the transfer, in flight, needs nothing more of this side
     * for its peer to finish its part (a small message already written
     * into the peer's memory; a receive the peer's message will land in
     * without this side's help). A schedule whose every transfer is
     * settled leaves its peers independent of this process's progress
     * (dpc_sched_settled). NULL: never. */
    bool (*settled)(dpc_transport_t *tp, const dpc_xfer_t *xfer);
    /* Optional: a send or receive finished within the call, where the
     * transport can do that cheaply (a small message copied into the
     * peer's mailbox; one already waiting for us copied out of it). They
     * return DPC_OK when done (buf free again, or holding the message), an
     * error as isend/irecv's callback would report it, or DPC_INPROGRESS
     * when they did nothing: then isend/irecv as usual. No callback, no
     * xfer. For a small collective the xfer's round trip through the
     * transport's completion queue cost more than the message itself.
     * NULL: never. */
    dpc_status_t (*send_now)(dpc_transport_t *tp, int peer, uint64_t tag, const void *buf,
                             size_t len, dpc_memtype_t mem);
    dpc_status_t (*recv_now)(dpc_transport_t *tp, int peer, uint64_t tag, void *buf, size_t len,
                             dpc_memtype_t mem);
    /* Optional: whether a message of len bytes to (send) or from peer goes
     * a way that send_now, or recv_now, can finish at all (the mailboxes),
     * rather than one only isend or irecv can: the same answer for the
     * same arguments as long as the transport lives. NULL: never. */
    bool (*now_way)(dpc_transport_t *tp, int peer, size_t len, dpc_memtype_t mem, bool send);
} dpc_transport_ops_t;

/* Bytes of a region descriptor as expose() writes it and peers receive it. */
#define DPC_REGION_DESC_MAX 256


struct dpc_transport {
    const dpc_transport_ops_t *ops;
    int rank;   /* this endpoint's rank in the group */
    int size;   /* group size */
    /* Messages of this many bytes or more may complete at their sender
     * before the transport has told the receiver all it needs (UCX's
     * rendezvous: the "data are in your buffer" message may still sit in
     * the sender's queue), and get sent only while the sender keeps
     * progressing the transport. A schedule that sends or receives one
     * ends with an acknowledgement: each receiver tells its senders it has
     * all their messages, and a sender waits for that before it returns
     * (dpc_sched.c, add_acks). 0: never needed. ack_min is for host
     * buffers, ack_min_device for device buffers (which may go another
     * way). */
    size_t ack_min, ack_min_device;
    /* The largest host message this transport carries without a rendezvous
     * (copied through the mailboxes, or UCX's eager protocol): what the cost
     * model prices at alpha, and beyond it at alpha_rndv (dpc_coll_args_t's
     * eager_max). The same on every rank of the group. 0: unknown (the
     * simulator), the model's one-node default. */
    size_t eager_max;
};

static inline int dpc_transport_one_sided(const dpc_transport_t *tp)
{
    return tp->ops->expose && tp->ops->unexpose && tp->ops->import && tp->ops->unimport &&
           tp->ops->iget && tp->ops->iput;
}

#endif
