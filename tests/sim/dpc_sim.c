/*
 * Simulated transport. Every transfer is a dpc_xfer on exactly one list:
 *   sends: in flight (sim->wire) -> arrived (dest's unexpected) -> done
 *   recvs: posted (owner's posted) -> done
 *   done:  the owner's completion queue, whose callbacks fire in the owner's
 *          progress() (never inside isend/irecv, as the contract says)
 * A send and a receive match on (source, destination, 64-bit tag), taking the
 * oldest candidate on each side.
 */
#include "config.h"
#include "dpc_sim.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { X_SEND, X_RECV, X_GET, X_PUT };

struct dpc_xfer {
    struct dpc_xfer *prev, *next;
    int kind, owner, peer;
    uint64_t tag;
    void *buf;
    size_t len;
    dpc_xfer_cb_t cb;
    void *arg;
    dpc_status_t result;
    int list;               /* which list it is on (for cancel) */
    uint64_t region;        /* get: the peer's region id, and offset in it */
    size_t off;
};

/* An exposed region. Ids are never reused, so a get that arrives after its
 * owner ended the exposure (an algorithm that finished while a peer still
 * read from it) fails instead of reading memory the owner has moved on
 * from. */
typedef struct sim_region {
    struct sim_region *next;
    uint64_t id;
    char *buf;
    size_t len;
} sim_region_t;

typedef struct { uint64_t id; int32_t owner; } sim_desc_t;

typedef struct xlist { struct dpc_xfer *head, *tail; int n; } xlist_t;

enum { L_NONE, L_WIRE, L_UNEXPECTED, L_POSTED, L_DONE };

typedef struct sim_rank {
    dpc_transport_t tp;
    dpc_sim_t *sim;
    xlist_t unexpected, posted, done;
    uint64_t nsends, nrecvs;
    int fail_send_at, fail_recv_at;
    bool dead;
    uint64_t msgs, bytes;
    uint64_t gets, bytes_got, puts, bytes_put;
    sim_region_t *regions;
} sim_rank_t;

struct dpc_sim {
    int p;
    sim_rank_t *ranks;
    xlist_t wire;
    uint64_t events, now, rng;
    int pending;
    bool reorder;
    uint64_t *pair_bytes, *pair_msgs;
    uint64_t next_region;
    const dpc_device_ops_t *dev_ops;
    void **dev_ctx;
    dpc_user_reduce_fn_t user_reduce;
    void *user_ctx;
    bool defer_local;
    size_t eager_max;
};

static void xl_push(xlist_t *l, struct dpc_xfer *x, int which)
{
    x->next = NULL;
    x->prev = l->tail;
    if (l->tail)
        l->tail->next = x;
    else
        l->head = x;
    l->tail = x;
    l->n++;
    x->list = which;
}

static void xl_remove(xlist_t *l, struct dpc_xfer *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        l->head = x->next;
    if (x->next)
        x->next->prev = x->prev;
    else
        l->tail = x->prev;
    l->n--;
    x->prev = x->next = NULL;
    x->list = L_NONE;
}

static uint64_t rng_next(dpc_sim_t *sim)
{
    /* xorshift64*: tiny, seedable, good enough to shuffle deliveries */
    uint64_t x = sim->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    sim->rng = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static sim_rank_t *rank_of_tp(dpc_transport_t *tp)
{
    return (sim_rank_t *)tp;  /* tp is the first member */
}

static xlist_t *list_of(dpc_sim_t *sim, struct dpc_xfer *x)
{
    switch (x->list) {
    case L_WIRE: return &sim->wire;
    case L_UNEXPECTED: return &sim->ranks[x->peer].unexpected; /* a send: at its dest */
    case L_POSTED: return &sim->ranks[x->owner].posted;
    case L_DONE: return &sim->ranks[x->owner].done;
    default: return NULL;
    }
}

static void finish(dpc_sim_t *sim, struct dpc_xfer *x, dpc_status_t st)
{
    xlist_t *l = list_of(sim, x);
    if (l)
        xl_remove(l, x);
    x->result = st;
    xl_push(&sim->ranks[x->owner].done, x, L_DONE);
    sim->events++;
}

/* Copy the send's data into a receive of len bytes at buf and complete
 * the send; the receive's status returned. */
static dpc_status_t deliver(dpc_sim_t *sim, struct dpc_xfer *snd, void *buf, size_t len)
{
    dpc_status_t st = DPC_OK;
    /* the transport contract: a receive is posted for exactly the length of
     * its message (the UCX glue routes by length: small messages through
     * shared memory, see dpc_transport.h) */
    if (snd->len != len)
        st = DPC_ERR_TRUNCATE;
    else if (snd->len)
        memcpy(buf, snd->buf, snd->len);
    finish(sim, snd, st);
    return st;
}

/* Copy the send's data into the receive and complete both. */
static void match(dpc_sim_t *sim, struct dpc_xfer *snd, struct dpc_xfer *rcv)
{
    finish(sim, rcv, deliver(sim, snd, rcv->buf, rcv->len));
}

static struct dpc_xfer *find(xlist_t *l, int peer_field_is_owner, int who, uint64_t tag)
{
    for (struct dpc_xfer *x = l->head; x; x = x->next) {
        int src = peer_field_is_owner ? x->owner : x->peer;
        if (src == who && x->tag == tag)
            return x;
    }
    return NULL;
}

/* A get reaches its peer: the data are read now, if the region is still
 * exposed and the range lies inside it. */
static void arrive_get(dpc_sim_t *sim, struct dpc_xfer *g)
{
    sim_region_t *r = sim->ranks[g->peer].regions;
    while (r && r->id != g->region)
        r = r->next;
    if (!r || g->off > r->len || g->len > r->len - g->off) {
        finish(sim, g, DPC_ERR_ARG);
        return;
    }
    if (g->len && g->kind == X_GET)
        memcpy(g->buf, r->buf + g->off, g->len);
    else if (g->len)
        memcpy(r->buf + g->off, g->buf, g->len);
    finish(sim, g, DPC_OK);
}

static void arrive(dpc_sim_t *sim, struct dpc_xfer *snd)
{
    sim_rank_t *dst = &sim->ranks[snd->peer];
    xl_remove(&sim->wire, snd);
    sim->events++;
    if (dst->dead) {
        finish(sim, snd, DPC_ERR_PEER_LOST);
        return;
    }
    if (snd->kind == X_GET || snd->kind == X_PUT) {
        arrive_get(sim, snd);
        return;
    }
    /* posted recvs at dst: their peer is the source */
    struct dpc_xfer *rcv = find(&dst->posted, 0, snd->owner, snd->tag);
    if (rcv)
        match(sim, snd, rcv);
    else
        xl_push(&dst->unexpected, snd, L_UNEXPECTED);
}

/* A send, get or put leaves for its peer (or fails at once if it is dead). */
static dpc_status_t to_wire(dpc_sim_t *sim, struct dpc_xfer *x, dpc_xfer_t **xfer_p)
{
    sim->pending++;
    sim->events++;
    *xfer_p = x;
    if (sim->ranks[x->peer].dead)
        finish(sim, x, DPC_ERR_PEER_LOST);
    else
        xl_push(&sim->wire, x, L_WIRE);
    return DPC_OK;
}

static dpc_status_t sim_isend(dpc_transport_t *tp, int peer, uint64_t tag, const void *buf,
                              size_t len, dpc_memtype_t mem, dpc_xfer_cb_t cb, void *arg,
                              dpc_xfer_t **xfer_p)
{
    sim_rank_t *me = rank_of_tp(tp);
    dpc_sim_t *sim = me->sim;
    (void)mem;
    if (peer < 0 || peer >= sim->p)
        return DPC_ERR_ARG;
    if (me->dead)
        return DPC_ERR_PEER_LOST;
    me->nsends++;
    if (me->fail_send_at && me->nsends == (uint64_t)me->fail_send_at)
        return DPC_ERR_TRANSPORT;
    struct dpc_xfer *x = calloc(1, sizeof(*x));
    if (!x)
        return DPC_ERR_NOMEM;
    *x = (struct dpc_xfer){.kind = X_SEND, .owner = tp->rank, .peer = peer, .tag = tag,
                           .buf = (void *)buf, .len = len, .cb = cb, .arg = arg};
    me->msgs++;
    me->bytes += len;
    if (sim->pair_bytes) {
        sim->pair_bytes[(size_t)tp->rank * (size_t)sim->p + (size_t)peer] += len;
        sim->pair_msgs[(size_t)tp->rank * (size_t)sim->p + (size_t)peer]++;
    }
    return to_wire(sim, x, xfer_p);
}

static dpc_status_t sim_irecv(dpc_transport_t *tp, int peer, uint64_t tag, void *buf,
                              size_t len, dpc_memtype_t mem, dpc_xfer_cb_t cb, void *arg,
                              dpc_xfer_t **xfer_p)
{
    sim_rank_t *me = rank_of_tp(tp);
    dpc_sim_t *sim = me->sim;
    (void)mem;
    if (peer < 0 || peer >= sim->p)
        return DPC_ERR_ARG;
    if (me->dead)
        return DPC_ERR_PEER_LOST;
    struct dpc_xfer *x = calloc(1, sizeof(*x));
    if (!x)
        return DPC_ERR_NOMEM;
    *x = (struct dpc_xfer){.kind = X_RECV, .owner = tp->rank, .peer = peer, .tag = tag,
                           .buf = buf, .len = len, .cb = cb, .arg = arg};
    sim->pending++;
    sim->events++;
    *xfer_p = x;
    me->nrecvs++;
    if (me->fail_recv_at && me->nrecvs == (uint64_t)me->fail_recv_at) {
        finish(sim, x, DPC_ERR_TRANSPORT);
        return DPC_OK;
    }
    if (sim->ranks[peer].dead) {
        finish(sim, x, DPC_ERR_PEER_LOST);
        return DPC_OK;
    }
    struct dpc_xfer *snd = find(&me->unexpected, 1, peer, tag);
    if (snd)
        match(sim, snd, x);
    else
        xl_push(&me->posted, x, L_POSTED);
    return DPC_OK;
}

/* A message that has arrived, taken within the call (the engine's path
 * for a receive whose message is there already: dpc_transport.h). Faults
 * are left to sim_irecv, which injects them. */
static dpc_status_t sim_recv_now(dpc_transport_t *tp, int peer, uint64_t tag, void *buf,
                                 size_t len, dpc_memtype_t mem)
{
    sim_rank_t *me = rank_of_tp(tp);
    dpc_sim_t *sim = me->sim;
    (void)mem;
    if (peer < 0 || peer >= sim->p || me->dead || me->fail_recv_at || sim->ranks[peer].dead)
        return DPC_INPROGRESS;
    struct dpc_xfer *snd = find(&me->unexpected, 1, peer, tag);
    if (!snd)
        return DPC_INPROGRESS;
    me->nrecvs++;
    return deliver(sim, snd, buf, len);
}

/* An eager send's copy of its data, freed when the message is taken. */
static void eager_done(void *arg, dpc_status_t status)
{
    (void)status;
    free(arg);
}

/* A small send taken within the call (opts.eager_max): its data copied
 * now, so the caller's buffer is free at once; the copy travels as an
 * ordinary send, whose completion only frees it. To a dead peer:
 * DPC_INPROGRESS (sim_isend's callback reports it); an injected send
 * fault (dpc_sim_fail_send) is returned as sim_isend returns it. */
static dpc_status_t sim_send_now(dpc_transport_t *tp, int peer, uint64_t tag, const void *buf,
                                 size_t len, dpc_memtype_t mem)
{
    sim_rank_t *me = rank_of_tp(tp);
    dpc_sim_t *sim = me->sim;
    if (len > sim->eager_max || peer < 0 || peer >= sim->p || me->dead || sim->ranks[peer].dead)
        return DPC_INPROGRESS;
    void *copy = malloc(len ? len : 1);
    if (!copy)
        return DPC_INPROGRESS;
    if (len)
        memcpy(copy, buf, len);
    dpc_xfer_t *x;
    dpc_status_t rc = sim_isend(tp, peer, tag, copy, len, mem, eager_done, copy, &x);
    if (rc != DPC_OK)
        free(copy);
    return rc;
}

/* With eager sends: a send of up to eager_max bytes can go by send_now,
 * any receive by recv_now (once its message has arrived). */
static bool sim_now_way(dpc_transport_t *tp, int peer, size_t len, dpc_memtype_t mem, bool send)
{
    dpc_sim_t *sim = rank_of_tp(tp)->sim;
    (void)mem;
    return peer >= 0 && peer < sim->p && (!send || len <= sim->eager_max);
}

static int sim_progress(dpc_transport_t *tp)
{
    sim_rank_t *me = rank_of_tp(tp);
    int n = 0;
    /* fire callbacks; a callback may complete nothing else here (callbacks
     * never post), so draining the queue once is enough */
    struct dpc_xfer *x;
    while ((x = me->done.head) != NULL) {
        xl_remove(&me->done, x);
        me->sim->pending--;
        me->sim->events++;
        x->cb(x->arg, x->result);
        free(x);
        n++;
    }
    return n;
}

static void sim_cancel(dpc_transport_t *tp, dpc_xfer_t *x)
{
    sim_rank_t *me = rank_of_tp(tp);
    if (x->list == L_DONE)
        return;    /* already finished: its callback comes with the real status */
    finish(me->sim, x, DPC_ERR_CANCELED);
}

static uint64_t sim_now(dpc_transport_t *tp)
{
    return rank_of_tp(tp)->sim->now;
}

static void sim_idle_wait(dpc_transport_t *tp, uint64_t max_ns)
{
    (void)tp;
    (void)max_ns;   /* the driver decides what happens next */
}

static dpc_status_t sim_expose(dpc_transport_t *tp, void *buf, size_t len, dpc_memtype_t mem,
                               void *desc, void **handle_p)
{
    sim_rank_t *me = rank_of_tp(tp);
    (void)mem;
    sim_region_t *r = calloc(1, sizeof(*r));
    if (!r)
        return DPC_ERR_NOMEM;
    *r = (sim_region_t){.next = me->regions, .id = ++me->sim->next_region, .buf = buf,
                        .len = len};
    me->regions = r;
    sim_desc_t d = {r->id, tp->rank};
    memcpy(desc, &d, sizeof(d));
    *handle_p = r;
    return DPC_OK;
}

static void sim_unexpose(dpc_transport_t *tp, void *handle)
{
    sim_rank_t *me = rank_of_tp(tp);
    for (sim_region_t **pp = &me->regions; *pp; pp = &(*pp)->next)
        if (*pp == handle) {
            *pp = ((sim_region_t *)handle)->next;
            free(handle);
            return;
        }
}

static dpc_status_t sim_import(dpc_transport_t *tp, int peer, const void *desc, void **remote_p)
{
    sim_desc_t d;
    memcpy(&d, desc, sizeof(d));
    if (peer < 0 || peer >= tp->size || d.owner != peer)
        return DPC_ERR_ARG;     /* a descriptor from somebody else */
    sim_desc_t *h = malloc(sizeof(*h));
    if (!h)
        return DPC_ERR_NOMEM;
    *h = d;
    *remote_p = h;
    return DPC_OK;
}

static void sim_unimport(dpc_transport_t *tp, void *remote)
{
    (void)tp;
    free(remote);
}

/* Reads and writes travel like messages (reordered with them), and count
 * as the traffic of the rank that makes them. */
static dpc_status_t one_sided(dpc_transport_t *tp, int kind, int peer, void *remote,
                              size_t offset, void *buf, size_t len, dpc_xfer_cb_t cb, void *arg,
                              dpc_xfer_t **xfer_p)
{
    sim_rank_t *me = rank_of_tp(tp);
    dpc_sim_t *sim = me->sim;
    const sim_desc_t *d = remote;
    if (peer < 0 || peer >= sim->p || d->owner != peer)
        return DPC_ERR_ARG;
    if (me->dead)
        return DPC_ERR_PEER_LOST;
    struct dpc_xfer *x = calloc(1, sizeof(*x));
    if (!x)
        return DPC_ERR_NOMEM;
    *x = (struct dpc_xfer){.kind = kind, .owner = tp->rank, .peer = peer, .buf = buf,
                           .len = len, .cb = cb, .arg = arg, .region = d->id, .off = offset};
    me->gets += kind == X_GET;
    me->bytes_got += kind == X_GET ? len : 0;
    me->puts += kind == X_PUT;
    me->bytes_put += kind == X_PUT ? len : 0;
    return to_wire(sim, x, xfer_p);
}

static dpc_status_t sim_iget(dpc_transport_t *tp, int peer, void *remote, size_t offset,
                             void *buf, size_t len, dpc_memtype_t mem, dpc_xfer_cb_t cb,
                             void *arg, dpc_xfer_t **xfer_p)
{
    (void)mem;
    return one_sided(tp, X_GET, peer, remote, offset, buf, len, cb, arg, xfer_p);
}

/* A put's data are read when it arrives: a source changed before the put
 * completes shows up as a wrong result, as it would on a real network. */
static dpc_status_t sim_iput(dpc_transport_t *tp, int peer, void *remote, size_t offset,
                             const void *buf, size_t len, dpc_memtype_t mem, dpc_xfer_cb_t cb,
                             void *arg, dpc_xfer_t **xfer_p)
{
    (void)mem;
    return one_sided(tp, X_PUT, peer, remote, offset, (void *)buf, len, cb, arg, xfer_p);
}

static const dpc_transport_ops_t sim_ops = {
    .isend = sim_isend, .irecv = sim_irecv, .progress = sim_progress,
    .cancel = sim_cancel, .now_ns = sim_now, .idle_wait = sim_idle_wait,
    .expose = sim_expose, .unexpose = sim_unexpose, .import = sim_import,
    .unimport = sim_unimport, .iget = sim_iget, .iput = sim_iput, .recv_now = sim_recv_now,
};
/* the same with small sends taken within the call (opts.eager_max) */
static const dpc_transport_ops_t sim_ops_eager = {
    .isend = sim_isend, .irecv = sim_irecv, .progress = sim_progress,
    .cancel = sim_cancel, .now_ns = sim_now, .idle_wait = sim_idle_wait,
    .expose = sim_expose, .unexpose = sim_unexpose, .import = sim_import,
    .unimport = sim_unimport, .iget = sim_iget, .iput = sim_iput, .recv_now = sim_recv_now,
    .send_now = sim_send_now, .now_way = sim_now_way,
};

dpc_sim_t *dpc_sim_create(int p, const dpc_sim_opts_t *opts)
{
    if (p < 1)
        return NULL;
    dpc_sim_t *sim = calloc(1, sizeof(*sim));
    if (!sim)
        return NULL;
    sim->p = p;
    sim->ranks = calloc((size_t)p, sizeof(sim_rank_t));
    if (!sim->ranks)
        goto err;
    if (opts && opts->per_peer_counters) {
        sim->pair_bytes = calloc((size_t)p * (size_t)p, sizeof(uint64_t));
        sim->pair_msgs = calloc((size_t)p * (size_t)p, sizeof(uint64_t));
        if (!sim->pair_bytes || !sim->pair_msgs)
            goto err;
    }
    if (opts) {
        sim->user_reduce = opts->user_reduce;
        sim->user_ctx = opts->user_ctx;
        sim->defer_local = opts->defer_local;
        sim->eager_max = opts->eager_max;
    }
    sim->reorder = opts && opts->reorder_seed;
    sim->rng = opts && opts->reorder_seed ? opts->reorder_seed : 1;
    for (int r = 0; r < p; r++) {
        sim->ranks[r].tp = (dpc_transport_t){.ops = sim->eager_max ? &sim_ops_eager : &sim_ops,
                                             .rank = r, .size = p};
        sim->ranks[r].sim = sim;
    }
    return sim;
err:
    dpc_sim_destroy(sim);
    return NULL;
}

static void free_list(xlist_t *l)
{
    struct dpc_xfer *x = l->head, *n;
    for (; x; x = n) {
        n = x->next;
        if (x->cb == eager_done)
            free(x->arg);   /* (the copy of an eager send nobody progressed) */
        free(x);
    }
    l->head = l->tail = NULL;
}

void dpc_sim_destroy(dpc_sim_t *sim)
{
    if (!sim)
        return;
    free_list(&sim->wire);
    if (sim->ranks)
        for (int r = 0; r < sim->p; r++) {
            free_list(&sim->ranks[r].unexpected);
            free_list(&sim->ranks[r].posted);
            free_list(&sim->ranks[r].done);
            while (sim->ranks[r].regions)
                sim_unexpose(&sim->ranks[r].tp, sim->ranks[r].regions);
        }
    free(sim->ranks);
    free(sim->pair_bytes);
    free(sim->pair_msgs);
    free(sim);
}

dpc_transport_t *dpc_sim_transport(dpc_sim_t *sim, int rank)
{
    return &sim->ranks[rank].tp;
}

int dpc_sim_size(const dpc_sim_t *sim)
{
    return sim->p;
}

int dpc_sim_deliver(dpc_sim_t *sim)
{
    int n = sim->wire.n;
    if (n == 0)
        return 0;
    if (!sim->reorder) {
        for (int i = 0; i < n; i++)
            arrive(sim, sim->wire.head);
        return n;
    }
    /* random subset (at least one), random order: pick uniformly each time */
    int take = 1 + (int)(rng_next(sim) % (uint64_t)n);
    for (int i = 0; i < take; i++) {
        int k = (int)(rng_next(sim) % (uint64_t)sim->wire.n);
        struct dpc_xfer *x = sim->wire.head;
        while (k--)
            x = x->next;
        arrive(sim, x);
    }
    return take;
}

uint64_t dpc_sim_events(const dpc_sim_t *sim) { return sim->events; }
void dpc_sim_set_device(dpc_sim_t *sim, const dpc_device_ops_t *ops, void **ctx)
{
    sim->dev_ops = ops;
    sim->dev_ctx = ctx;
}
void dpc_sim_poke(dpc_sim_t *sim) { sim->events++; }
const dpc_device_ops_t *dpc_sim_device(const dpc_sim_t *sim, int rank, void **ctx)
{
    *ctx = sim->dev_ctx ? sim->dev_ctx[rank] : NULL;
    return sim->dev_ops;
}
uint64_t dpc_sim_now(const dpc_sim_t *sim) { return sim->now; }
void dpc_sim_advance(dpc_sim_t *sim, uint64_t ns) { sim->now += ns; }
int dpc_sim_pending(const dpc_sim_t *sim) { return sim->pending; }
uint64_t dpc_sim_msgs_sent(const dpc_sim_t *sim, int rank) { return sim->ranks[rank].msgs; }
uint64_t dpc_sim_bytes_sent(const dpc_sim_t *sim, int rank) { return sim->ranks[rank].bytes; }
uint64_t dpc_sim_gets(const dpc_sim_t *sim, int rank) { return sim->ranks[rank].gets; }
uint64_t dpc_sim_bytes_got(const dpc_sim_t *sim, int rank) { return sim->ranks[rank].bytes_got; }
uint64_t dpc_sim_bytes_put(const dpc_sim_t *sim, int rank) { return sim->ranks[rank].bytes_put; }
int dpc_sim_regions(const dpc_sim_t *sim, int rank)
{
    int n = 0;
    for (const sim_region_t *r = sim->ranks[rank].regions; r; r = r->next)
        n++;
    return n;
}

uint64_t dpc_sim_bytes_to(const dpc_sim_t *sim, int from, int to)
{
    return sim->pair_bytes ? sim->pair_bytes[(size_t)from * (size_t)sim->p + (size_t)to] : 0;
}

uint64_t dpc_sim_msgs_to(const dpc_sim_t *sim, int from, int to)
{
    return sim->pair_msgs ? sim->pair_msgs[(size_t)from * (size_t)sim->p + (size_t)to] : 0;
}

void dpc_sim_fail_send(dpc_sim_t *sim, int rank, int k) { sim->ranks[rank].fail_send_at = k; }
void dpc_sim_fail_recv(dpc_sim_t *sim, int rank, int k) { sim->ranks[rank].fail_recv_at = k; }
bool dpc_sim_dead(const dpc_sim_t *sim, int rank) { return sim->ranks[rank].dead; }

void dpc_sim_kill(dpc_sim_t *sim, int q)
{
    sim_rank_t *dead = &sim->ranks[q];
    dead->dead = true;
    sim->events++;
    /* everything in flight to or from q fails for the living side; q's own
     * transfers fail too (its callbacks fire only if somebody progresses it) */
    struct dpc_xfer *x, *n;
    for (x = sim->wire.head; x; x = n) {
        n = x->next;
        if (x->owner == q || x->peer == q)
            finish(sim, x, DPC_ERR_PEER_LOST);
    }
    for (int r = 0; r < sim->p; r++) {
        sim_rank_t *rk = &sim->ranks[r];
        for (x = rk->unexpected.head; x; x = n) {
            n = x->next;
            if (x->owner == q || r == q)
                finish(sim, x, DPC_ERR_PEER_LOST);
        }
        for (x = rk->posted.head; x; x = n) {
            n = x->next;
            if (x->peer == q || r == q)
                finish(sim, x, DPC_ERR_PEER_LOST);
        }
    }
}

bool dpc_sim_defers_local(const dpc_sim_t *sim)
{
    return sim->defer_local;
}

dpc_user_reduce_fn_t dpc_sim_user_reduce(const dpc_sim_t *sim, void **ctx)
{
    *ctx = sim->user_ctx;
    return sim->user_reduce;
}
