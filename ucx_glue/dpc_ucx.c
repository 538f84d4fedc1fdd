/*
 * UCX transport (see dpc_ucx.h). Completions: UCX calls our callbacks from
 * inside ucp_worker_progress (or, for a send that finished at once, we note
 * it ourselves); either way the transfer goes on a done list, and only our
 * progress() calls the engine's callback, as the transport contract wants.
 */
#include "config.h"
#include "dpc_ucx.h"
#include "dpc_cma.h"
#include "dpc_shm.h"
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucp/api/ucp.h>

struct dpc_xfer {
    struct dpc_xfer *next;
    dpc_ucx_t *ux;
    dpc_xfer_cb_t cb;
    void *arg;
    void *req;              /* UCX request while in flight (counted in ucp_pending) */
    dpc_status_t status;
    int done;
    /* through a shared-memory mailbox (small messages on one node, and the
     * descriptions of large ones: see dpc_shm_rndv_t) */
    bool mailbox;           /* one of those */
    int on_list;            /* SHM_POSTED, SHM_WAITING or SHM_LENT while queued there */
    int proc;               /* the peer's process index */
    unsigned kind;          /* what it writes into the peer's ring (DPC_SHM_MSG...) */
    uint64_t tag;
    void *buf;
    size_t len;
    dpc_shm_rndv_t desc;    /* a receive's large message, to read (SHM_READING) */
    uint64_t fin_id;        /* a receive's FIN: the sender's id for its send */
    int32_t fin_status;     /* and how the read went, for the sender */
};
/* SHM_LENT: a large send whose description is in the peer's ring, until
 * the peer's FIN says it has read the buffer. SHM_READING: a receive
 * matched with a large message's description, read at the next progress. */
enum { SHM_NONE, SHM_POSTED, SHM_WAITING, SHM_LENT, SHM_READING };

/* A mailbox record that arrived before its receive: kept here. */
typedef struct shm_early {
    struct shm_early *next;
    uint64_t tag;
    unsigned kind;
    size_t len, cap;
    char data[];
} shm_early_t;
/* Early records are kept in blocks of two sizes, EARLY_BLOCK and the
 * largest record (shm_max), and blocks given back are reused: a sender
 * running ahead (a bcast root) makes one per call, and fresh memory each
 * time costs page faults. Spares: up to EARLY_SPARE_MAX small ones and
 * EARLY_LARGE_FIRST large ones (1 MiB of 64 KiB blocks, what one peer may
 * have moved aside at once: EARLY_MAX_BYTES). The first large block comes
 * with EARLY_LARGE_FIRST - 1 spares, each written once: 8 MPI_Iallreduce of
 * 256 KiB in flight at 4 ranks, whose 64 KiB messages often arrive early,
 * needed 7-9 blocks at a time, and reached a new most now and then for
 * hundreds of rounds, each new block 16 page faults there (0-224 faults in
 * 190 rounds after 10 to warm up, test_mpi_nbc's
 * test_in_flight_scratch_reused: at most 64 in 30; freed after each use,
 * 529); made at once, they fault once. */
#define EARLY_SPARE_MAX 64
#define EARLY_LARGE_FIRST 16
#define EARLY_BLOCK 8192u
/* Messages UCX carries of up to this many bytes need no acknowledgement
 * (dpc_transport_t's ack_min): the bound the schedules have had since the
 * mailboxes carried 8 KiB, when it was also theirs. */
#define UCX_EAGER_MAX 8192u

/* Per peer process: receives posted, records not yet matched, sends (and
 * FINs) waiting for room in its ring, and large sends it is reading (each
 * a FIFO: the order of one peer's messages with one tag is kept, as UCX
 * keeps it). */
typedef struct shm_peer {
    struct dpc_xfer *posted, *posted_tail;
    shm_early_t *early, *early_tail;
    size_t early_bytes;
    struct dpc_xfer *waiting, *waiting_tail;
    struct dpc_xfer *lent, *lent_tail;
} shm_peer_t;

struct dpc_ucx {
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_address_t *addr;
    size_t addr_len;
    int efd;                /* wakeup fd, -1 if the transports have none */
    int nprocs;
    char *peer_addrs;
    size_t *peer_offs;
    ucp_ep_h *eps;
    struct dpc_xfer *done_head, *done_tail;
    struct dpc_xfer *free_xfers;    /* recycled: no malloc per message */
    uint64_t mem_types;     /* bit per ucs_memory_type_t UCX handles */
    int64_t *cma_pids;      /* per process, 0 where we cannot read it (another node);
                               NULL: none */
    dpc_shm_t *shm;         /* mailboxes with the processes of this node; else NULL */
    int *shm_slot;          /* per process: its index in shm, -1 on another node */
    shm_peer_t *shm_peers;  /* per process (those of other nodes unused) */
    int shm_waiting;        /* sends waiting for room, over all peers */
    int shm_lent;           /* large sends waiting for their FIN, over all peers */
    struct dpc_xfer *reads, *reads_tail;    /* receives to read (SHM_READING) */
    size_t shm_max;         /* messages up to this go by mailbox */
    shm_early_t *early_spare[2];   /* blocks for early records, free: EARLY_BLOCK
                                      bytes, shm_max bytes */
    int nearly_spare[2];
    bool early_large_made;         /* the first large ones made (early_get) */
    void *bell_req;         /* the posted doorbell receive */
    int asleep;             /* our mailbox flag is up (dpc_ucx_arm) */
    int ucp_pending;        /* our UCX sends and receives in flight */
    unsigned ucp_idle_polls;    /* progress calls since UCX was last polled */
};

/* The doorbell: an empty UCX message to a process that sleeps on UCX's
 * wakeup fd while a mailbox record for it has arrived. Its context id is
 * the last one, which communicators never get (dpc_ucx.h). */
#define BELL_TAG ((uint64_t)((1u << DPC_UCX_CTX_BITS) - 1) << DPC_UCX_CTX_SHIFT)
#define BELL_MASK (~(~UINT64_C(0) << DPC_UCX_SRC_SHIFT))

typedef struct group_tp {
    dpc_transport_t tp;     /* first: the engine hands us this pointer */
    dpc_ucx_t *ux;
    int *world;
} group_tp_t;

static dpc_status_t from_ucs(ucs_status_t st)
{
    switch (st) {
    case UCS_OK: return DPC_OK;
    case UCS_INPROGRESS: return DPC_INPROGRESS;
    case UCS_ERR_NO_MEMORY: return DPC_ERR_NOMEM;
    case UCS_ERR_CANCELED: return DPC_ERR_CANCELED;
    case UCS_ERR_MESSAGE_TRUNCATED: return DPC_ERR_TRUNCATE;
    case UCS_ERR_UNREACHABLE: case UCS_ERR_CONNECTION_RESET: case UCS_ERR_ENDPOINT_TIMEOUT:
        return DPC_ERR_PEER_LOST;
    case UCS_ERR_TIMED_OUT: return DPC_ERR_TIMEOUT;
    default: return DPC_ERR_TRANSPORT;
    }
}

static struct dpc_xfer *xfer_get(dpc_ucx_t *ux)
{
    struct dpc_xfer *x = ux->free_xfers;
    if (x)
        ux->free_xfers = x->next;
    else if (!(x = malloc(sizeof(*x))))
        return NULL;
    return x;
}

static void xfer_put(dpc_ucx_t *ux, struct dpc_xfer *x)
{
    x->next = ux->free_xfers;
    ux->free_xfers = x;
}

static void push_done(dpc_ucx_t *ux, struct dpc_xfer *x, dpc_status_t st)
{
    x->status = st;
    x->done = 1;
    x->next = NULL;
    if (ux->done_tail)
        ux->done_tail->next = x;
    else
        ux->done_head = x;
    ux->done_tail = x;
}

/* A UCX request handed back by ucp_*_nbx: in flight until its callback. */
static void ucp_track(dpc_ucx_t *ux, struct dpc_xfer *x, void *r)
{
    x->req = r;
    ux->ucp_pending++;
}

/* (a callback run inside ucp_*_nbx, before it returned, finds none) */
static void ucp_untrack(struct dpc_xfer *x)
{
    if (x->req) {
        x->req = NULL;
        x->ux->ucp_pending--;
    }
}

static void send_cb(void *request, ucs_status_t status, void *user_data)
{
    struct dpc_xfer *x = user_data;
    ucp_untrack(x);
    ucp_request_free(request);
    push_done(x->ux, x, from_ucs(status));
}

static void recv_cb(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                    void *user_data)
{
    struct dpc_xfer *x = user_data;
    (void)info;
    ucp_untrack(x);
    ucp_request_free(request);
    push_done(x->ux, x, from_ucs(status));
}

static ucs_memory_type_t ucs_mem(dpc_memtype_t m)
{
    return m == DPC_MEM_CUDA ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
}

static dpc_status_t get_ep(dpc_ucx_t *ux, int proc, ucp_ep_h *ep_p)
{
    if (proc < 0 || proc >= ux->nprocs)
        return DPC_ERR_ARG;
    if (!ux->eps[proc]) {
        ucp_ep_params_t ep = {
            .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
            .address = (const ucp_address_t *)(ux->peer_addrs + ux->peer_offs[proc]),
            .err_mode = UCP_ERR_HANDLING_MODE_NONE,
        };
        ucs_status_t st = ucp_ep_create(ux->worker, &ep, &ux->eps[proc]);
        if (st != UCS_OK)
            return from_ucs(st);
    }
    *ep_p = ux->eps[proc];
    return DPC_OK;
}

/*
 * Small messages between processes of one node go through the mailboxes
 * (dpc_shm.h) instead of UCX; which way a message goes depends on its
 * length alone, and a receive is posted for exactly its message's length
 * (the transport contract), so both sides always pick the same way.
 *
 * Larger host messages, where every process can read every other's memory
 * (cross-memory attach, dpc_cma.h), go by rendezvous of our own: the
 * sender writes a description (dpc_shm_rndv_t; the id is its xfer's
 * address) into the receiver's ring (a DPC_SHM_RNDV record, matched as a
 * message is); the receiver
 * reads the data straight from the sender's buffer into its own (one
 * copy, process_vm_readv) and answers with a DPC_SHM_FIN record carrying
 * the id, which ends the send.
 *
 * Why not UCX's rendezvous: with its "put" scheme (our default, see
 * dpc_ucx_create) a message takes three trips between the processes before
 * the receiver has it (RTS, RTR, the data and ATP), each one needing the
 * other side's progress; on the 2-core reference VM a 2-rank 1 MiB ring
 * allreduce took 437 us with it and 222 us with UCX's "get", a pairwise
 * alltoall 187 against 123 us. "get" in turn ends a receive before its
 * acknowledgement has left, so a receiver that leaves the library owes
 * its sender a message (the hang that made "put" the default). Here a
 * receive ends only once its FIN is in the sender's ring: a rank that has
 * finished owes nobody anything, and the schedule needs no
 * acknowledgements of its own (ack_min 0 in dpc_ucx_group_create).
 */
#define BY_UCX (-1)
/* Whether we can read process proc's memory (cross-memory attach). */
static bool readable(const dpc_ucx_t *ux, int proc)
{
    return ux->cma_pids && ux->cma_pids[proc] != 0;
}

/* The way a message to or from process proc goes: DPC_SHM_MSG (in a
 * mailbox record), DPC_SHM_RNDV (our rendezvous), or BY_UCX. Both sides
 * of a message take the same way: the length is the same, and so is
 * whether the two share a node's mailboxes and can read each other. */
static int ring_way(const dpc_ucx_t *ux, int proc, size_t len, dpc_memtype_t mem)
{
    if (!ux->shm || mem != DPC_MEM_HOST || ux->shm_slot[proc] < 0)
        return BY_UCX;
    if (len <= ux->shm_max)
        return DPC_SHM_MSG;
    return readable(ux, proc) ? DPC_SHM_RNDV : BY_UCX;
}

/* The mailbox calls (dpc_shm.h) for process proc of this node: they know
 * the node's processes by their index in the segment. */
static int box_put(dpc_ucx_t *ux, int proc, uint64_t tag, unsigned kind, const void *buf,
                   size_t len)
{
    return dpc_shm_put(ux->shm, ux->shm_slot[proc], tag, kind, buf, len);
}

static bool box_peek(dpc_ucx_t *ux, int proc, uint64_t *tag, unsigned *kind, const void **data,
                     size_t *len)
{
    return dpc_shm_peek(ux->shm, ux->shm_slot[proc], tag, kind, data, len);
}

static void box_pop(dpc_ucx_t *ux, int proc)
{
    dpc_shm_pop(ux->shm, ux->shm_slot[proc]);
}

static bool box_room(dpc_ucx_t *ux, int proc, size_t len)
{
    return dpc_shm_room(ux->shm, ux->shm_slot[proc], len);
}

static void bell_cb(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                    void *user_data)
{
    dpc_ucx_t *ux = user_data;
    (void)status;
    (void)info;
    ucp_request_free(request);
    ux->bell_req = NULL;       /* posted again by the next progress */
}

/* Keeps a receive for doorbells posted (the bells that came meanwhile
 * complete at once: they only had to wake us). */
static void bell_post(dpc_ucx_t *ux)
{
    for (int i = 0; i < 64 && ux->shm && !ux->bell_req; i++) {
        ucp_request_param_t prm = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
            .cb.recv = bell_cb, .user_data = ux};
        ucs_status_ptr_t r = ucp_tag_recv_nbx(ux->worker, NULL, 0, BELL_TAG, BELL_MASK, &prm);
        if (UCS_PTR_IS_ERR(r))
            return;
        if (r)
            ux->bell_req = r;
    }
}

static void ring_bell(dpc_ucx_t *ux, int proc)
{
    ucp_ep_h ep = NULL;
    if (get_ep(ux, proc, &ep) != DPC_OK)
        return;
    ucp_request_param_t prm = {.op_attr_mask = 0};
    ucs_status_ptr_t r = ucp_tag_send_nbx(ep, NULL, 0, BELL_TAG, &prm);
    if (UCS_PTR_IS_PTR(r))
        ucp_request_free(r);   /* released by UCX when sent */
}

/* FIFO lists of transfers, for one peer. */
static void xlist_append(struct dpc_xfer **head, struct dpc_xfer **tail, struct dpc_xfer *x)
{
    x->next = NULL;
    if (*tail)
        (*tail)->next = x;
    else
        *head = x;
    *tail = x;
}

static bool xlist_remove(struct dpc_xfer **head, struct dpc_xfer **tail, struct dpc_xfer *x)
{
    struct dpc_xfer *prev = NULL;
    for (struct dpc_xfer *y = *head; y; prev = y, y = y->next) {
        if (y != x)
            continue;
        if (prev)
            prev->next = y->next;
        else
            *head = y->next;
        if (*tail == y)
            *tail = prev;
        return true;
    }
    return false;
}

/* Writes what x owes its peer's ring: its message, the description of
 * its buffer (a large send), or its FIN (a receive that has read). Returns
 * dpc_shm_put's answer. */
static int mailbox_put(dpc_ucx_t *ux, struct dpc_xfer *x)
{
    if (x->kind == DPC_SHM_RNDV) {
        dpc_shm_rndv_t d = {(uintptr_t)x->buf, x->len, (uintptr_t)x};
        return box_put(ux, x->proc, x->tag, DPC_SHM_RNDV, &d, sizeof(d));
    }
    if (x->kind == DPC_SHM_FIN)
        return box_put(ux, x->proc, x->fin_id, DPC_SHM_FIN, &x->fin_status,
                       sizeof(x->fin_status));
    return box_put(ux, x->proc, x->tag, DPC_SHM_MSG, x->buf, x->len);
}

/* x's record is in the ring (rc: dpc_shm_put's), the peer rung if asleep:
 * a message or a FIN is done (a FIN's receive with the status its read
 * left in x->status); a large send now waits for the peer's FIN. */
static void mailbox_sent(dpc_ucx_t *ux, struct dpc_xfer *x, int rc)
{
    if (rc == 1)
        ring_bell(ux, x->proc);
    if (x->kind == DPC_SHM_RNDV) {
        shm_peer_t *pp = &ux->shm_peers[x->proc];
        x->on_list = SHM_LENT;
        xlist_append(&pp->lent, &pp->lent_tail, x);
        ux->shm_lent++;
        return;
    }
    x->on_list = SHM_NONE;
    push_done(ux, x, x->kind == DPC_SHM_FIN ? x->status : DPC_OK);
}

/* x's record into the ring now, or behind the others waiting for room (in
 * order). */
static void mailbox_send_or_queue(dpc_ucx_t *ux, struct dpc_xfer *x)
{
    shm_peer_t *pp = &ux->shm_peers[x->proc];
    int rc = pp->waiting ? -1 : mailbox_put(ux, x);
    if (rc >= 0) {
        mailbox_sent(ux, x, rc);
    } else {
        x->on_list = SHM_WAITING;
        xlist_append(&pp->waiting, &pp->waiting_tail, x);
        ux->shm_waiting++;
    }
}

/* Reads the large message a DPC_SHM_RNDV record from process proc
 * describes into buf (len bytes at most). Returns the receive's status;
 * *fin_id and *fin_status are what the FIN tells the sender, and false
 * comes back when there is nobody to tell (a malformed record). */
static bool rndv_read(dpc_ucx_t *ux, int proc, const void *data, size_t n, void *buf, size_t len,
                      dpc_status_t *st, uint64_t *fin_id, int32_t *fin_status)
{
    dpc_shm_rndv_t d;
    if (n != sizeof(d) || !readable(ux, proc)) {
        *st = DPC_ERR_TRANSPORT;
        return false;
    }
    memcpy(&d, data, sizeof(d));
    size_t take = d.len < len ? (size_t)d.len : len;
    dpc_status_t rd = take ? dpc_cma_read((pid_t)ux->cma_pids[proc], d.addr, buf, take) : DPC_OK;
    *st = rd != DPC_OK ? rd : d.len > len ? DPC_ERR_TRUNCATE : DPC_OK;
    *fin_id = d.id;
    *fin_status = rd;       /* (a receive too short is the receiver's error alone, as in UCX) */
    return true;
}

/* A record for receive x: a message, copied, x done; or a large one's
 * description, kept for the next progress to read (mailbox_reads). Not
 * read here: a receive posted by a nonblocking call's start would make the
 * start copy the whole message while the program waits to compute (2
 * ranks, 64 MiB MPI_Iallreduce: 60% of it hidden behind a sleep, 80% when
 * the progress thread reads). */
static void mailbox_deliver(dpc_ucx_t *ux, struct dpc_xfer *x, unsigned kind, const void *data,
                            size_t len)
{
    x->on_list = SHM_NONE;
    if (kind == DPC_SHM_RNDV) {
        if (len != sizeof(x->desc)) {
            push_done(ux, x, DPC_ERR_TRANSPORT);   /* nobody to tell: malformed */
            return;
        }
        memcpy(&x->desc, data, sizeof(x->desc));
        x->on_list = SHM_READING;
        xlist_append(&ux->reads, &ux->reads_tail, x);
        return;
    }
    if (len)
        memcpy(x->buf, data, len < x->len ? len : x->len);
    push_done(ux, x, len > x->len ? DPC_ERR_TRUNCATE : DPC_OK);
}

/* The receives matched with descriptions: each read, then ended by its FIN
 * (once that is in the sender's ring). */
static void mailbox_reads(dpc_ucx_t *ux)
{
    struct dpc_xfer *x;
    while ((x = ux->reads) != NULL) {
        xlist_remove(&ux->reads, &ux->reads_tail, x);
        dpc_status_t st;
        if (!rndv_read(ux, x->proc, &x->desc, sizeof(x->desc), x->buf, x->len, &st, &x->fin_id,
                       &x->fin_status)) {
            push_done(ux, x, st);
            continue;
        }
        x->status = st;
        x->kind = DPC_SHM_FIN;
        mailbox_send_or_queue(ux, x);
    }
}

/* A FIN from process proc: the large send it names is over. */
static void fin_arrived(dpc_ucx_t *ux, shm_peer_t *pp, uint64_t id, const void *data, size_t len)
{
    struct dpc_xfer *x = pp->lent;
    while (x && (uintptr_t)x != id)
        x = x->next;
    if (!x)
        return;     /* names no send of ours: a damaged record, nothing to end */
    xlist_remove(&pp->lent, &pp->lent_tail, x);
    ux->shm_lent--;
    int32_t st = DPC_ERR_TRANSPORT;
    if (len == sizeof(st))
        memcpy(&st, data, sizeof(st));
    x->on_list = SHM_NONE;
    push_done(ux, x, (dpc_status_t)st);
}

/* Which of the two block sizes a record of len bytes takes (early_get). */
static int early_class(const dpc_ucx_t *ux, size_t len)
{
    return len > EARLY_BLOCK && ux->shm_max > EARLY_BLOCK;
}

static void early_put(dpc_ucx_t *ux, shm_early_t *e);

static shm_early_t *early_get(dpc_ucx_t *ux, size_t len)
{
    int k = early_class(ux, len);
    shm_early_t *e = ux->early_spare[k];
    if (e && e->cap >= len) {
        ux->early_spare[k] = e->next;
        ux->nearly_spare[k]--;
        return e;
    }
    size_t cap = k ? ux->shm_max : EARLY_BLOCK;
    if (cap < len)
        cap = len;
    if (k && !ux->early_large_made) {
        ux->early_large_made = true;
        for (int i = 1; i < EARLY_LARGE_FIRST; i++) {
            shm_early_t *f = malloc(sizeof(*f) + cap);
            if (!f)
                break;
            memset(f->data, 0, cap);
            f->cap = cap;
            early_put(ux, f);
        }
    }
    if ((e = malloc(sizeof(*e) + cap)) != NULL)
        e->cap = cap;
    return e;
}

static void early_put(dpc_ucx_t *ux, shm_early_t *e)
{
    int k = e->cap == EARLY_BLOCK ? 0 : e->cap == ux->shm_max ? 1 : -1;
    if (k < 0 || ux->nearly_spare[k] >= (k ? EARLY_LARGE_FIRST : EARLY_SPARE_MAX)) {
        free(e);
        return;
    }
    e->next = ux->early_spare[k];
    ux->early_spare[k] = e;
    ux->nearly_spare[k]++;
}

/* Records from process proc go to the receives posted for them, in order,
 * and its FINs to our large sends. A record nobody has asked for yet stays
 * in the ring (its receive, when it comes, copies it straight out: one
 * copy; and a sender that runs ahead fills the ring and waits, which
 * bounds what it can heap on us), unless a receive posted for a later
 * record, or a FIN that may be behind it, needs it out of the way: then it
 * is kept aside, up to EARLY_MAX_BYTES per peer. */
#define EARLY_MAX_BYTES (1u << 20)
static void mailbox_drain(dpc_ucx_t *ux, int proc)
{
    shm_peer_t *pp = &ux->shm_peers[proc];
    uint64_t tag;
    unsigned kind;
    const void *data;
    size_t len;
    while ((pp->posted || pp->lent) && box_peek(ux, proc, &tag, &kind, &data, &len)) {
        if (kind == DPC_SHM_FIN) {
            fin_arrived(ux, pp, tag, data, len);
            box_pop(ux, proc);
            continue;
        }
        struct dpc_xfer *x = pp->posted;
        while (x && x->tag != tag)
            x = x->next;
        if (x) {
            xlist_remove(&pp->posted, &pp->posted_tail, x);
            mailbox_deliver(ux, x, kind, data, len);
        } else {
            shm_early_t *e = pp->early_bytes < EARLY_MAX_BYTES ? early_get(ux, len) : NULL;
            if (!e)
                return;        /* left in the ring: tried again at the next progress */
            e->next = NULL;
            e->tag = tag;
            e->kind = kind;
            e->len = len;
            memcpy(e->data, data, len);
            if (pp->early_tail)
                pp->early_tail->next = e;
            else
                pp->early = e;
            pp->early_tail = e;
            pp->early_bytes += len;
        }
        box_pop(ux, proc);
    }
}

static void mailbox_progress(dpc_ucx_t *ux)
{
    if (ux->asleep) {
        dpc_shm_sleep_end(ux->shm);
        ux->asleep = 0;
    }
    for (int i = 0; i < ux->nprocs && ux->shm_waiting; i++) {
        shm_peer_t *pp = &ux->shm_peers[i];
        struct dpc_xfer *x;
        while ((x = pp->waiting) != NULL) {
            int rc = mailbox_put(ux, x);
            if (rc < 0)
                break;     /* still no room: it stays first */
            xlist_remove(&pp->waiting, &pp->waiting_tail, x);
            ux->shm_waiting--;
            mailbox_sent(ux, x, rc);
        }
    }
    for (int i = 0; i < ux->nprocs; i++)
        if (ux->shm_slot[i] >= 0)
            mailbox_drain(ux, i);
    if (ux->reads)
        mailbox_reads(ux);
    bell_post(ux);
}

/* A message (kind DPC_SHM_MSG) or a large one's description (DPC_SHM_RNDV). */
static dpc_status_t mailbox_isend(dpc_ucx_t *ux, int proc, uint64_t tag, unsigned kind,
                                  const void *buf, size_t len, dpc_xfer_cb_t cb, void *arg,
                                  dpc_xfer_t **xfer_p)
{
    struct dpc_xfer *x = xfer_get(ux);
    if (!x)
        return DPC_ERR_NOMEM;
    *x = (struct dpc_xfer){.ux = ux, .cb = cb, .arg = arg, .mailbox = true, .proc = proc,
                           .kind = kind, .tag = tag, .buf = (void *)buf, .len = len};
    mailbox_send_or_queue(ux, x);
    *xfer_p = x;
    return DPC_OK;
}

/* The first record kept aside for tag from process proc (*prev_p: the one
 * before it, for early_unlink), or NULL. */
static shm_early_t *early_find(shm_peer_t *pp, uint64_t tag, shm_early_t **prev_p)
{
    shm_early_t *prev = NULL;
    for (shm_early_t *e = pp->early; e; prev = e, e = e->next)
        if (e->tag == tag) {
            *prev_p = prev;
            return e;
        }
    return NULL;
}

static void early_unlink(shm_peer_t *pp, shm_early_t *e, shm_early_t *prev)
{
    if (prev)
        prev->next = e->next;
    else
        pp->early = e->next;
    if (pp->early_tail == e)
        pp->early_tail = prev;
    pp->early_bytes -= e->len;
}

static dpc_status_t mailbox_irecv(dpc_ucx_t *ux, int proc, uint64_t tag, void *buf, size_t len,
                                  dpc_xfer_cb_t cb, void *arg, dpc_xfer_t **xfer_p)
{
    struct dpc_xfer *x = xfer_get(ux);
    if (!x)
        return DPC_ERR_NOMEM;
    *x = (struct dpc_xfer){.ux = ux, .cb = cb, .arg = arg, .mailbox = true, .proc = proc, .tag = tag,
                           .buf = buf, .len = len};
    *xfer_p = x;
    shm_peer_t *pp = &ux->shm_peers[proc];
    shm_early_t *prev, *e = early_find(pp, tag, &prev);
    if (e) {
        early_unlink(pp, e, prev);
        mailbox_deliver(ux, x, e->kind, e->data, e->len);
        early_put(ux, e);
        return DPC_OK;
    }
    x->on_list = SHM_POSTED;
    xlist_append(&pp->posted, &pp->posted_tail, x);
    mailbox_drain(ux, proc);    /* it may be in the ring already */
    return DPC_OK;
}

/* A posted receive or a waiting send ends cancelled. A receive about to
 * read or waiting for room for its FIN, or a large send the peer may be
 * reading, ends on its own, as a UCX send on the wire does: the peer needs
 * the FIN, and the buffer of a send is the peer's to read until its FIN. */
static void mailbox_cancel(dpc_ucx_t *ux, struct dpc_xfer *x)
{
    shm_peer_t *pp = &ux->shm_peers[x->proc];
    if (x->on_list == SHM_LENT || x->on_list == SHM_READING || x->kind == DPC_SHM_FIN)
        return;
    bool found = x->on_list == SHM_POSTED ? xlist_remove(&pp->posted, &pp->posted_tail, x)
                                          : xlist_remove(&pp->waiting, &pp->waiting_tail, x);
    if (found && x->on_list == SHM_WAITING)
        ux->shm_waiting--;
    if (found) {
        x->on_list = SHM_NONE;
        push_done(ux, x, DPC_ERR_CANCELED);
    }
}

static dpc_status_t grp_isend(dpc_transport_t *tp, int peer, uint64_t tag, const void *buf,
                              size_t len, dpc_memtype_t mem, dpc_xfer_cb_t cb, void *arg,
                              dpc_xfer_t **xfer_p)
{
    group_tp_t *g = (group_tp_t *)tp;
    dpc_ucx_t *ux = g->ux;
    ucp_ep_h ep = NULL;
    if (peer < 0 || peer >= tp->size)
        return DPC_ERR_ARG;
    uint64_t t = tag | ((uint64_t)tp->rank << DPC_UCX_SRC_SHIFT);
    int way = ring_way(ux, g->world[peer], len, mem);
    if (way != BY_UCX)
        return mailbox_isend(ux, g->world[peer], t, (unsigned)way, buf, len, cb, arg, xfer_p);
    dpc_status_t rc = get_ep(ux, g->world[peer], &ep);
    if (rc != DPC_OK)
        return rc;
    struct dpc_xfer *x = xfer_get(ux);
    if (!x)
        return DPC_ERR_NOMEM;
    *x = (struct dpc_xfer){.ux = ux, .cb = cb, .arg = arg};
    ucp_request_param_t prm = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_MEMORY_TYPE,
        .cb.send = send_cb, .user_data = x, .memory_type = ucs_mem(mem)};
    ucs_status_ptr_t r = ucp_tag_send_nbx(ep, buf, len, t, &prm);
    if (UCS_PTR_IS_ERR(r)) {
        xfer_put(ux, x);
        return from_ucs(UCS_PTR_STATUS(r));
    }
    if (r == NULL)
        push_done(ux, x, DPC_OK);     /* finished at once: report from progress() */
    else if (!x->done)
        ucp_track(ux, x, r);
    *xfer_p = x;
    return DPC_OK;
}

/* The process of group rank peer, when a message of len bytes to or from
 * it goes through the rings: small ones, and (rndv true) large ones by
 * rendezvous too; -1 when not. */
static int mailbox_proc(dpc_transport_t *tp, int peer, size_t len, dpc_memtype_t mem, bool rndv)
{
    group_tp_t *g = (group_tp_t *)tp;
    if (peer < 0 || peer >= tp->size)
        return -1;
    int way = ring_way(g->ux, g->world[peer], len, mem);
    if (way == BY_UCX || (way == DPC_SHM_RNDV && !rndv))
        return -1;
    return g->world[peer];
}

/* A small message straight into the peer's ring, when it has room and no
 * earlier message of ours waits for some (they go in order). */
static dpc_status_t grp_send_now(dpc_transport_t *tp, int peer, uint64_t tag, const void *buf,
                                 size_t len, dpc_memtype_t mem)
{
    dpc_ucx_t *ux = ((group_tp_t *)tp)->ux;
    int proc = mailbox_proc(tp, peer, len, mem, false);
    if (proc < 0 || ux->shm_peers[proc].waiting)
        return DPC_INPROGRESS;
    int rc = box_put(ux, proc, tag | ((uint64_t)tp->rank << DPC_UCX_SRC_SHIFT), DPC_SHM_MSG,
                     buf, len);
    if (rc < 0)
        return DPC_INPROGRESS;
    if (rc == 1)
        ring_bell(ux, proc);
    return DPC_OK;
}

static bool grp_now_way(dpc_transport_t *tp, int peer, size_t len, dpc_memtype_t mem, bool send)
{
    /* (a large message's description is read by recv_now; its send is
     * grp_isend's, which waits for the reader's word) */
    return mailbox_proc(tp, peer, len, mem, !send) >= 0;
}

/* A message already here: kept aside earlier, or first in the peer's ring
 * (a record there for another receive is left to mailbox_drain, which
 * knows the receives posted). A large one's description is read at once
 * when its FIN can follow at once: the ring to the sender has room and no
 * record of ours waits for some (after the read, the receive must end). */
static dpc_status_t grp_recv_now(dpc_transport_t *tp, int peer, uint64_t tag, void *buf,
                                 size_t len, dpc_memtype_t mem)
{
    dpc_ucx_t *ux = ((group_tp_t *)tp)->ux;
    int proc = mailbox_proc(tp, peer, len, mem, true);
    if (proc < 0)
        return DPC_INPROGRESS;
    shm_peer_t *pp = &ux->shm_peers[proc];
    uint64_t t = tag | ((uint64_t)peer << DPC_UCX_SRC_SHIFT), got;
    unsigned kind;
    const void *data;
    size_t n;
    shm_early_t *prev, *e = early_find(pp, t, &prev);
    if (e) {
        kind = e->kind;
        data = e->data;
        n = e->len;
    } else if (!box_peek(ux, proc, &got, &kind, &data, &n) || got != t ||
               kind == DPC_SHM_FIN) {
        return DPC_INPROGRESS;
    }
    dpc_status_t st;
    if (kind == DPC_SHM_RNDV) {
        uint64_t fin_id;
        int32_t fin_status;
        if (pp->waiting || !box_room(ux, proc, sizeof(fin_status)))
            return DPC_INPROGRESS;
        if (rndv_read(ux, proc, data, n, buf, len, &st, &fin_id, &fin_status) &&
            box_put(ux, proc, fin_id, DPC_SHM_FIN, &fin_status, sizeof(fin_status)) == 1)
            ring_bell(ux, proc);
    } else {
        if (n)
            memcpy(buf, data, n < len ? n : len);
        st = n > len ? DPC_ERR_TRUNCATE : DPC_OK;
    }
    if (e) {
        early_unlink(pp, e, prev);
        early_put(ux, e);
    } else {
        box_pop(ux, proc);
    }
    return st;
}

static dpc_status_t grp_irecv(dpc_transport_t *tp, int peer, uint64_t tag, void *buf,
                              size_t len, dpc_memtype_t mem, dpc_xfer_cb_t cb, void *arg,
                              dpc_xfer_t **xfer_p)
{
    group_tp_t *g = (group_tp_t *)tp;
    dpc_ucx_t *ux = g->ux;
    if (peer < 0 || peer >= tp->size)
        return DPC_ERR_ARG;
    if (ring_way(ux, g->world[peer], len, mem) != BY_UCX)
        return mailbox_irecv(ux, g->world[peer], tag | ((uint64_t)peer << DPC_UCX_SRC_SHIFT),
                             buf, len, cb, arg, xfer_p);
    struct dpc_xfer *x = xfer_get(ux);
    if (!x)
        return DPC_ERR_NOMEM;
    *x = (struct dpc_xfer){.ux = ux, .cb = cb, .arg = arg};
    ucp_tag_recv_info_t info;
    ucp_request_param_t prm = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_MEMORY_TYPE | UCP_OP_ATTR_FIELD_RECV_INFO,
        .cb.recv = recv_cb, .user_data = x, .memory_type = ucs_mem(mem),
        .recv_info.tag_info = &info};
    uint64_t t = tag | ((uint64_t)peer << DPC_UCX_SRC_SHIFT);
    ucs_status_ptr_t r = ucp_tag_recv_nbx(ux->worker, buf, len, t, ~UINT64_C(0), &prm);
    if (UCS_PTR_IS_ERR(r)) {
        xfer_put(ux, x);
        return from_ucs(UCS_PTR_STATUS(r));
    }
    if (r == NULL)
        push_done(ux, x, DPC_OK);
    else if (!x->done)
        ucp_track(ux, x, r);
    *xfer_p = x;
    return DPC_OK;
}

/* With mailboxes, a wait for a small collective is a loop of progress
 * calls in which only a mailbox can deliver; polling UCX's own transports
 * as well made each turn longer (perf, a 2-rank 8-byte allgather loop:
 * 15% of the samples in ucp_worker_progress and UCX's shared-memory
 * polling; 1.5% after), so a record was seen later and a core kept busy. While none of our UCX requests is in flight, UCX
 * is polled only every UCP_IDLE_POLL_EVERY-th call: what it may still
 * carry then (a peer's early message or wireup, a doorbell) can wait that
 * long, and a rank about to sleep polls it first (ux_poll_ucp_next). */
#define UCP_IDLE_POLL_EVERY 16u
static void ux_poll_ucp_next(dpc_ucx_t *ux)
{
    ux->ucp_idle_polls = UCP_IDLE_POLL_EVERY;
}

static int ux_progress(dpc_ucx_t *ux)
{
    int n = 0;
    if (!ux->shm || ux->ucp_pending > 0 || ++ux->ucp_idle_polls >= UCP_IDLE_POLL_EVERY) {
        ux->ucp_idle_polls = 0;
        while (ucp_worker_progress(ux->worker))
            ;
    }
    if (ux->shm)
        mailbox_progress(ux);
    struct dpc_xfer *x;
    while ((x = ux->done_head) != NULL) {
        ux->done_head = x->next;
        if (!ux->done_head)
            ux->done_tail = NULL;
        x->cb(x->arg, x->status);
        xfer_put(ux, x);
        n++;
    }
    return n;
}

static int grp_progress(dpc_transport_t *tp)
{
    return ux_progress(((group_tp_t *)tp)->ux);
}

static void grp_cancel(dpc_transport_t *tp, dpc_xfer_t *x)
{
    dpc_ucx_t *ux = ((group_tp_t *)tp)->ux;
    if (x->on_list != SHM_NONE) {
        mailbox_cancel(ux, x);
        return;
    }
    /* receives are cancelled by UCX (callback with UCS_ERR_CANCELED); a send
     * already handed to the wire completes on its own or with its peer */
    if (x->req && !x->done)
        ucp_request_cancel(ux->worker, x->req);
}

static uint64_t grp_now(dpc_transport_t *tp)
{
    struct timespec ts;
    (void)tp;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool dpc_ucx_work_pending(const dpc_ucx_t *ux)
{
    return ux->done_head || ux->reads;
}

/* Sleep until the worker has something for us (or max_ns passes): with more
 * ranks than cores a spinning rank would starve the peer it waits for. */
static void grp_idle_wait(dpc_transport_t *tp, uint64_t max_ns)
{
    dpc_ucx_t *ux = ((group_tp_t *)tp)->ux;
    if (dpc_ucx_work_pending(ux))
        return;
    /* sends waiting for room in a peer's ring: room comes with no message
     * to wake us (the peer just reads), so give the core away, no more */
    if (ux->shm_waiting) {
        sched_yield();
        return;
    }
    /* a mailbox record waiting, or one coming while we sleep rings us */
    if (ux->shm && !dpc_shm_sleep_begin(ux->shm))
        return;
    if (ux->efd >= 0) {
        ux_poll_ucp_next(ux);    /* whatever woke us, or kept us awake */
        ucs_status_t st = ucp_worker_arm(ux->worker);
        if (st == UCS_OK) {
            struct pollfd pfd = {.fd = ux->efd, .events = POLLIN};
            int ms = (int)(max_ns / 1000000);
            poll(&pfd, 1, ms > 0 ? ms : 1);
        }
        /* (UCS_ERR_BUSY: events pending: go progress them) */
        if (st == UCS_OK || st == UCS_ERR_BUSY) {
            if (ux->shm)
                dpc_shm_sleep_end(ux->shm);
            return;
        }
    }
    if (ux->shm)
        dpc_shm_sleep_end(ux->shm);
    sched_yield();
}

int dpc_ucx_arm(dpc_ucx_t *ux)
{
    if (dpc_ucx_work_pending(ux))
        return DPC_UCX_ARM_BUSY;
    if (ux->efd < 0 || ux->shm_waiting)
        return DPC_UCX_ARM_NONE;     /* (waiting for room: nap, see grp_idle_wait) */
    /* the flag stays up until the next progress (mailbox_progress) */
    if (ux->shm && !ux->asleep) {
        if (!dpc_shm_sleep_begin(ux->shm))
            return DPC_UCX_ARM_BUSY;
        ux->asleep = 1;
    }
    ux_poll_ucp_next(ux);        /* the progress after the wake-up polls UCX */
    ucs_status_t st = ucp_worker_arm(ux->worker);
    if (st == UCS_OK)
        return ux->efd;
    return st == UCS_ERR_BUSY ? DPC_UCX_ARM_BUSY : DPC_UCX_ARM_NONE;
}

/*
 * One-sided reads, on one node, by cross-memory attach (dpc_cma.h): a
 * region's descriptor is the owner's pid, address and length; exposing
 * costs nothing, and a read is one process_vm_readv by the reader, done
 * when the call returns (reported from progress(), as the contract wants).
 */
#define REGION_MAGIC 0x64706372u     /* "dpcr" */
typedef struct region_desc {
    uint32_t magic;
    int32_t world;          /* the owner's process index */
    int64_t pid;
    uint64_t base, len;
} region_desc_t;

static dpc_status_t grp_expose(dpc_transport_t *tp, void *buf, size_t len, dpc_memtype_t mem,
                               void *desc, void **handle_p)
{
    group_tp_t *g = (group_tp_t *)tp;
    if (mem != DPC_MEM_HOST || !g->ux->cma_pids)
        return DPC_ERR_UNSUPPORTED;
    region_desc_t d = {REGION_MAGIC, g->world[tp->rank], g->ux->cma_pids[g->world[tp->rank]],
                       (uint64_t)(uintptr_t)buf, len};
    memcpy(desc, &d, sizeof(d));
    *handle_p = NULL;         /* nothing to undo */
    return DPC_OK;
}

static void grp_unexpose(dpc_transport_t *tp, void *handle)
{
    (void)tp;
    (void)handle;
}

static dpc_status_t grp_import(dpc_transport_t *tp, int peer, const void *desc, void **remote_p)
{
    group_tp_t *g = (group_tp_t *)tp;
    region_desc_t d;
    memcpy(&d, desc, sizeof(d));
    /* a descriptor that is not the peer's own: a mismatched message */
    if (peer < 0 || peer >= tp->size || d.magic != REGION_MAGIC || d.world != g->world[peer] ||
        d.pid != g->ux->cma_pids[d.world])
        return DPC_ERR_ARG;
    *remote_p = (void *)desc;   /* lives in the schedule's scratch as long as we need it */
    return DPC_OK;
}

static void grp_unimport(dpc_transport_t *tp, void *remote)
{
    (void)tp;
    (void)remote;
}

static dpc_status_t one_sided(dpc_transport_t *tp, int peer, void *remote, size_t offset,
                              void *buf, size_t len, dpc_memtype_t mem, int write,
                              dpc_xfer_cb_t cb, void *arg, dpc_xfer_t **xfer_p)
{
    dpc_ucx_t *ux = ((group_tp_t *)tp)->ux;
    region_desc_t d;
    memcpy(&d, remote, sizeof(d));
    if (peer < 0 || peer >= tp->size || mem != DPC_MEM_HOST || offset > d.len ||
        len > d.len - offset)
        return DPC_ERR_ARG;
    struct dpc_xfer *x = xfer_get(ux);
    if (!x)
        return DPC_ERR_NOMEM;
    *x = (struct dpc_xfer){.ux = ux, .cb = cb, .arg = arg};
    dpc_status_t st = !len ? DPC_OK
                    : write ? dpc_cma_write((pid_t)d.pid, d.base + offset, buf, len)
                            : dpc_cma_read((pid_t)d.pid, d.base + offset, buf, len);
    push_done(ux, x, st);
    *xfer_p = x;
    return DPC_OK;
}

static dpc_status_t grp_iget(dpc_transport_t *tp, int peer, void *remote, size_t offset,
                             void *buf, size_t len, dpc_memtype_t mem, dpc_xfer_cb_t cb,
                             void *arg, dpc_xfer_t **xfer_p)
{
    return one_sided(tp, peer, remote, offset, buf, len, mem, 0, cb, arg, xfer_p);
}

static dpc_status_t grp_iput(dpc_transport_t *tp, int peer, void *remote, size_t offset,
                             const void *buf, size_t len, dpc_memtype_t mem, dpc_xfer_cb_t cb,
                             void *arg, dpc_xfer_t **xfer_p)
{
    return one_sided(tp, peer, remote, offset, (void *)buf, len, mem, 1, cb, arg, xfer_p);
}

/* A mailbox send is in the peer's ring once it is not waiting for room (a
 * large one's buffer is then read by the peer alone); a posted mailbox
 * receive of a small message needs only the peer's write, of a large one
 * our read and FIN. UCX's transfers may need this side's worker
 * (rendezvous, queued sends): never settled. */
static bool grp_settled(dpc_transport_t *tp, const dpc_xfer_t *x)
{
    (void)tp;
    return x->mailbox && x->on_list != SHM_WAITING && x->on_list != SHM_READING &&
           !(x->on_list == SHM_POSTED && x->len > x->ux->shm_max);
}

static const dpc_transport_ops_t grp_ops = {
    .isend = grp_isend, .irecv = grp_irecv, .progress = grp_progress, .cancel = grp_cancel,
    .now_ns = grp_now, .idle_wait = grp_idle_wait, .settled = grp_settled,
    .send_now = grp_send_now, .recv_now = grp_recv_now, .now_way = grp_now_way,
};
/* the same, with one-sided reads: for groups when cross-memory attach works */
static const dpc_transport_ops_t grp_ops_cma = {
    .isend = grp_isend, .irecv = grp_irecv, .progress = grp_progress, .cancel = grp_cancel,
    .now_ns = grp_now, .idle_wait = grp_idle_wait, .settled = grp_settled,
    .send_now = grp_send_now, .recv_now = grp_recv_now, .now_way = grp_now_way,
    .expose = grp_expose, .unexpose = grp_unexpose, .import = grp_import,
    .unimport = grp_unimport, .iget = grp_iget, .iput = grp_iput,
};

dpc_status_t dpc_ucx_create(int thread_multi, int single_node, dpc_ucx_t **ux_p, char *err,
                            size_t errlen)
{
    dpc_ucx_t *ux = calloc(1, sizeof(*ux));
    ucp_config_t *conf = NULL;
    ucs_status_t st;
    if (!ux)
        return DPC_ERR_NOMEM;
    ux->efd = -1;
    st = ucp_config_read("DPCOLL", NULL, &conf);   /* DPCOLL_UCX_* tunes our context only */
    if (st != UCS_OK)
        goto fail;
    /* Rendezvous by "put" unless the user chose: with the default "get" over
     * cma, the receiver owes the sender an acknowledgement after its receive
     * has completed, and a receiver that has finished its collective and
     * left the library (into the MPI library's own calls, or computation)
     * can leave it unsent, so the sender's collective hangs (seen with
     * test_fakedev_coll at 3 ranks; "put" never did). With "put" a rank's
     * part is over when its own operations are. */
    if (!getenv("DPCOLL_UCX_RNDV_SCHEME") && !getenv("UCX_RNDV_SCHEME"))
        ucp_config_modify(conf, "RNDV_SCHEME", "put_zcopy");
    /* One node: shared memory only. With UCX's default of every transport,
     * each progress call also polls the tcp interface (an epoll_wait system
     * call): a fifth of a small collective's time, for a network no peer
     * is reached through. */
    if (single_node && !getenv("DPCOLL_UCX_TLS") && !getenv("UCX_TLS"))
        ucp_config_modify(conf, "TLS", "sm,self");
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
        .features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP,
        .mt_workers_shared = 0,
    };
    st = ucp_init(&params, conf, &ux->ctx);
    if (st != UCS_OK) {
        /* some transport sets have no wakeup support: go on without it */
        params.features = UCP_FEATURE_TAG;
        st = ucp_init(&params, conf, &ux->ctx);
    }
    ucp_config_release(conf);
    if (st != UCS_OK)
        goto fail;
    ucp_worker_params_t wp = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = thread_multi ? UCS_THREAD_MODE_SERIALIZED : UCS_THREAD_MODE_SINGLE,
    };
    st = ucp_worker_create(ux->ctx, &wp, &ux->worker);
    if (st != UCS_OK)
        goto fail;
    if (ucp_worker_get_efd(ux->worker, &ux->efd) != UCS_OK)
        ux->efd = -1;
    st = ucp_worker_get_address(ux->worker, &ux->addr, &ux->addr_len);
    if (st != UCS_OK)
        goto fail;
    ucp_context_attr_t ca = {.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES};
    if (ucp_context_query(ux->ctx, &ca) == UCS_OK)
        ux->mem_types = ca.memory_types;
    *ux_p = ux;
    return DPC_OK;
fail:
    snprintf(err, errlen, "UCX initialization failed: %s", ucs_status_string(st));
    dpc_ucx_destroy(ux);
    return DPC_ERR_TRANSPORT;
}

dpc_status_t dpc_ucx_address(dpc_ucx_t *ux, const void **addr, size_t *len)
{
    *addr = ux->addr;
    *len = ux->addr_len;
    return DPC_OK;
}

dpc_status_t dpc_ucx_set_peers(dpc_ucx_t *ux, int nprocs, const char *addrs,
                               const size_t *offs, const size_t *lens)
{
    size_t total = 0;
    for (int i = 0; i < nprocs; i++)
        total = offs[i] + lens[i] > total ? offs[i] + lens[i] : total;
    ux->peer_addrs = malloc(total ? total : 1);
    ux->peer_offs = malloc(sizeof(size_t) * (size_t)nprocs);
    ux->eps = calloc((size_t)nprocs, sizeof(ucp_ep_h));
    if (!ux->peer_addrs || !ux->peer_offs || !ux->eps)
        return DPC_ERR_NOMEM;
    memcpy(ux->peer_addrs, addrs, total);
    memcpy(ux->peer_offs, offs, sizeof(size_t) * (size_t)nprocs);
    ux->nprocs = nprocs;
    return DPC_OK;
}

static void mailbox_fini(dpc_ucx_t *ux)
{
    if (!ux->shm)
        return;
    if (ux->bell_req) {
        ucp_request_cancel(ux->worker, ux->bell_req);
        for (int i = 0; i < 1000000 && ux->bell_req; i++)
            ucp_worker_progress(ux->worker);
    }
    for (int i = 0; ux->shm_peers && i < ux->nprocs; i++)
        while (ux->shm_peers[i].early) {
            shm_early_t *e = ux->shm_peers[i].early;
            ux->shm_peers[i].early = e->next;
            free(e);
        }
    for (int k = 0; k < 2; k++)
        while (ux->early_spare[k]) {
            shm_early_t *e = ux->early_spare[k];
            ux->early_spare[k] = e->next;
            free(e);
        }
    free(ux->shm_peers);
    ux->shm_peers = NULL;
    free(ux->shm_slot);
    ux->shm_slot = NULL;
    dpc_shm_destroy(ux->shm);
    ux->shm = NULL;
}

/* Whether slots (dpc_ucx_set_shm's) name each of shm's nbox indexes once
 * (false also out of memory). */
static bool slots_valid(const int *slots, int nprocs, int nbox)
{
    bool *named = calloc((size_t)nbox + 1, sizeof(bool)), ok = named != NULL;
    int n = 0;
    for (int i = 0; i < nprocs && ok; i++) {
        ok = slots[i] >= -1 && slots[i] < nbox && (slots[i] < 0 || !named[slots[i]]);
        if (ok && slots[i] >= 0) {
            named[slots[i]] = true;
            n++;
        }
    }
    free(named);
    return ok && n == nbox;
}

dpc_status_t dpc_ucx_set_shm(dpc_ucx_t *ux, dpc_shm_t *shm, const int *slots, size_t max_msg)
{
    int nbox = dpc_shm_nprocs(shm);
    if (ux->shm || !ux->eps || max_msg > DPC_SHM_MAX_MSG ||
        (slots ? !slots_valid(slots, ux->nprocs, nbox) : nbox != ux->nprocs))
        return DPC_ERR_ARG;
    size_t ring_max = dpc_shm_max_msg(nbox);
    ux->shm_max = max_msg < ring_max ? max_msg : ring_max;
    ux->shm_peers = calloc((size_t)ux->nprocs, sizeof(shm_peer_t));
    ux->shm_slot = malloc(sizeof(int) * (size_t)ux->nprocs);
    if (!ux->shm_peers || !ux->shm_slot) {
        free(ux->shm_peers);
        free(ux->shm_slot);
        ux->shm_peers = NULL;
        ux->shm_slot = NULL;
        return DPC_ERR_NOMEM;
    }
    for (int i = 0; i < ux->nprocs; i++)
        ux->shm_slot[i] = slots ? slots[i] : i;
    ux->shm = shm;
    bell_post(ux);
    return DPC_OK;
}

bool dpc_ucx_has_shm(const dpc_ucx_t *ux)
{
    return ux && ux->shm;
}

void dpc_ucx_destroy(dpc_ucx_t *ux)
{
    if (!ux)
        return;
    mailbox_fini(ux);
    if (ux->eps) {
        /* close every endpoint, flushing; all processes do this together */
        void **reqs = calloc((size_t)ux->nprocs, sizeof(void *));
        for (int i = 0; i < ux->nprocs && reqs; i++) {
            if (!ux->eps[i])
                continue;
            ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = 0};
            ucs_status_ptr_t r = ucp_ep_close_nbx(ux->eps[i], &prm);
            reqs[i] = UCS_PTR_IS_PTR(r) ? r : NULL;
        }
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < ux->nprocs && reqs; i++) {
            while (reqs[i] && ucp_request_check_status(reqs[i]) == UCS_INPROGRESS) {
                ucp_worker_progress(ux->worker);
                clock_gettime(CLOCK_MONOTONIC, &t);
                if (t.tv_sec - t0.tv_sec > 10)
                    break;     /* a peer that never answers: do not hang */
            }
            if (reqs[i])
                ucp_request_free(reqs[i]);
        }
        free(reqs);
    }
    /* transfers completed but never reported: nobody waits for them now */
    while (ux->done_head) {
        struct dpc_xfer *x = ux->done_head;
        ux->done_head = x->next;
        free(x);
    }
    while (ux->free_xfers) {
        struct dpc_xfer *x = ux->free_xfers;
        ux->free_xfers = x->next;
        free(x);
    }
    if (ux->addr)
        ucp_worker_release_address(ux->worker, ux->addr);
    if (ux->worker)
        ucp_worker_destroy(ux->worker);
    if (ux->ctx)
        ucp_cleanup(ux->ctx);
    free(ux->eps);
    free(ux->peer_addrs);
    free(ux->peer_offs);
    free(ux->cma_pids);
    free(ux);
}

dpc_status_t dpc_ucx_set_cma(dpc_ucx_t *ux, int nprocs, const int64_t *pids)
{
    free(ux->cma_pids);
    ux->cma_pids = NULL;
    if (!pids)
        return DPC_OK;
    if (nprocs != ux->nprocs)
        return DPC_ERR_ARG;
    if (!(ux->cma_pids = malloc(sizeof(int64_t) * (size_t)nprocs)))
        return DPC_ERR_NOMEM;
    memcpy(ux->cma_pids, pids, sizeof(int64_t) * (size_t)nprocs);
    return DPC_OK;
}

dpc_status_t dpc_ucx_group_create(dpc_ucx_t *ux, int rank, int size, const int *world,
                                  dpc_transport_t **tp_p)
{
    if (size > DPC_UCX_MAX_RANKS)
        return DPC_ERR_UNSUPPORTED;
    group_tp_t *g = calloc(1, sizeof(*g));
    int *w = malloc(sizeof(int) * (size_t)size);
    if (!g || !w) {
        free(g);
        free(w);
        return DPC_ERR_NOMEM;
    }
    memcpy(w, world, sizeof(int) * (size_t)size);
    /* What every member can say of the group alike: whether all of its
     * members share this node's mailboxes, and whether each can read all
     * the others' memory (the pairs agree: dpc_ucx_set_shm, _set_cma). */
    bool boxed = ux->shm != NULL, read_all = ux->cma_pids != NULL;
    for (int i = 0; i < size; i++) {
        if (w[i] < 0 || w[i] >= ux->nprocs) {
            free(g);
            free(w);
            return DPC_ERR_ARG;
        }
        boxed = boxed && ux->shm_slot[w[i]] >= 0;
        read_all = read_all && readable(ux, w[i]);
    }
    /* (a message UCX carries past UCX_EAGER_MAX may take its rendezvous:
     * see dpc_transport_t's ack_min. Seen without it: a nonblocking ring
     * allgather of 16 MiB blocks at 3 ranks, a rank done and gone into
     * MPICH's own allgather, its right neighbour waiting for the last
     * word of 64 of its messages, which sat in the rank's UCX queue. Our
     * own rendezvous (ring_way) needs none: its transfers end on both sides
     * only when nothing more is owed. Mailbox messages past UCX_EAGER_MAX
     * on a group that also sends by UCX get them too, at no risk: so does
     * a group with members on other nodes, whose messages to them go by
     * UCX. Its eager limit, which prices messages, is UCX's too.) */
    size_t ucx_rndv = UCX_EAGER_MAX + 1;
    g->tp = (dpc_transport_t){.ops = read_all ? &grp_ops_cma : &grp_ops, .rank = rank,
                              .size = size, .ack_min = boxed && read_all ? 0 : ucx_rndv,
                              .ack_min_device = ucx_rndv,
                              .eager_max = boxed ? ux->shm_max : UCX_EAGER_MAX};
    g->ux = ux;
    g->world = w;
    *tp_p = &g->tp;
    return DPC_OK;
}

void dpc_ucx_group_destroy(dpc_transport_t *tp)
{
    group_tp_t *g = (group_tp_t *)tp;
    if (!g)
        return;
    free(g->world);
    free(g);
}

void dpc_ucx_describe(dpc_ucx_t *ux, char *buf, size_t len)
{
    unsigned maj, min, rel;
    ucp_get_version(&maj, &min, &rel);
    size_t off = (size_t)snprintf(buf, len, "UCX %u.%u.%u; memory types:", maj, min, rel);
    for (int m = 0; m < UCS_MEMORY_TYPE_LAST && off < len; m++)
        if (ux && (ux->mem_types & (UINT64_C(1) << m)))
            off += (size_t)snprintf(buf + off, len - off, " %s", ucs_memory_type_names[m]);
    int local = 0, readable_n = 0;
    for (int i = 0; ux && i < ux->nprocs; i++) {
        local += ux->shm && ux->shm_slot[i] >= 0;
        readable_n += ux->shm && ux->shm_slot[i] >= 0 && readable(ux, i);
    }
    const char *others = ux && local < ux->nprocs ? ", UCX to other nodes" : "";
    if (off < len)
        off += (size_t)snprintf(buf + off, len - off, "; wakeup: %s; small messages: %s",
                                ux && ux->efd >= 0 ? "yes" : "no",
                                local ? "shared-memory mailboxes" : "UCX");
    if (off < len && local && local < ux->nprocs)
        off += (size_t)snprintf(buf + off, len - off, " with this node's %d process%s%s",
                                local, local == 1 ? "" : "es", others);
    if (off < len)
        snprintf(buf + off, len - off, "; large host messages: %s%s",
                 readable_n ? "read by the receiver (cross-memory attach)" : "UCX",
                 readable_n && local < ux->nprocs ? others : "");
}

