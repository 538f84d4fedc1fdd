/*
 * Allreduce by owners: the chunk algorithm of the device pipeline when the
 * GPU reduces (coll/pipeline.c). Rank r owns block r of the vector. Every
 * rank sends block j of its input to rank j; rank r combines the p
 * contributions to its block starting with its own, x_r op x_{r+1} op ...
 * op x_{r-1} (indices mod p: the own one is at hand first, and in place the
 * result may overwrite it at once), and sends the finished block to every
 * rank. The ops are commutative (all of MPI's predefined ones are).
 *
 * Why not the ring: with the data on a GPU and the transport on the host,
 * the ring reduces a partial sum at every step and then needs it back on
 * the host to pass it on (a device round trip per step). Here a rank's whole
 * reduction is one chain on its own block, run as kernels that read the
 * peers' contributions straight from the pinned memory they arrived in (the
 * GPU addresses pinned host memory directly): no copy to the device first,
 * and one copy of the finished block back to the host. Both rounds send
 * (p-1)/p of the vector, as the ring does; the messages of a round all go
 * at once, which suits the few ranks that share a node's GPUs.
 *
 * A rank whose buffers are on the host sends and receives the same
 * messages and reduces on the host, so ranks may mix. Results: each block
 * is reduced by its owner alone and passed on bit for bit, so every rank
 * gets the same bits.
 *
 * Cost (n bytes): 2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n (gamma +
 * beta_reread), the device's gamma where the device reduces (the
 * contributions are reduced from the whole messages they arrived in).
 */
#include "config.h"
#include "coll_util.h"
#include "owner.h"

enum { TAG_CONTRIB = 1, TAG_RESULT = 2 };

size_t dpc_owner_slot_bytes(size_t count, size_t es, int p)
{
    return p > 1 ? (size_t)(p - 1) * part_len(count, p, 0) * es : 0;
}

dpc_step_id_t dpc_owner_reduce_chain(dpc_sched_t *s, bool dev, char *dst, const char *const *x,
                                     const dpc_step_id_t *ready, int p, size_t n,
                                     const dpc_coll_args_t *a)
{
    dpc_step_id_t prev = DPC_STEP_NONE;
    for (int j = 1; j < p; j++) {
        const char *acc = j == 1 ? x[0] : dst;
        dpc_step_id_t d0 = j == 1 ? ready[0] : prev;
        prev = dev ? dpc_sched_device_reduce(s, dst, acc, x[j], n, a->dtype, a->op,
                                             DPC_AFTER(d0, ready[j]))
                   : dpc_sched_reduce(s, dst, acc, x[j], n, a->dtype, a->op,
                                      DPC_AFTER(d0, ready[j]));
    }
    return prev;
}

dpc_status_t dpc_allreduce_owner_build(const dpc_coll_args_t *a, dpc_sched_t *s,
                                       const dpc_owner_dev_t *dev)
{
    int p = a->size, r = a->rank;
    size_t es = elsize(a), n = a->count * es;
    if (a->count == 0)
        return DPC_OK;
    if (p == 1) {
        if (dev)     /* the pipeline does not ask for that: a device-to-device copy */
            return DPC_ERR_ARG;
        if (!a->in_place)
            dpc_sched_copy(s, a->rbuf, a->sbuf, n, DPC_NO_DEPS);
        return DPC_OK;
    }
    size_t *off, *len;
    const char **x = malloc(sizeof(char *) * (size_t)p);
    dpc_step_id_t *ready = malloc(sizeof(dpc_step_id_t) * (size_t)p * 3);
    if (!x || !ready || even_blocks(a->count, es, p, &off, &len)) {
        free(x);
        free(ready);
        return DPC_ERR_NOMEM;
    }
    dpc_step_id_t *staged = ready + p, *sent = ready + 2 * p;
    /* what goes to the peers: the input itself on a host rank, a pinned
     * copy of the device input on a device rank (not of the own block: it
     * never leaves the device) */
    const char *in = dev ? dev->stage : input_of(a);
    char *out = dev ? dev->result : a->rbuf;
    char *slots = dev ? dev->slots : dpc_sched_scratch(s, dpc_owner_slot_bytes(a->count, es, p));
    for (int j = 0; j < p; j++)
        staged[j] = DPC_STEP_NONE;
    if (dev) {
        dpc_step_id_t lo = DPC_STEP_NONE, hi = DPC_STEP_NONE;
        if (off[r])
            lo = dpc_sched_device_copy(s, dev->stage, dev->own, off[r], DPC_TO_HOST, DPC_NO_DEPS);
        size_t end = off[r] + len[r];
        if (end < n)
            hi = dpc_sched_device_copy(s, dev->stage + end, dev->own + end, n - end, DPC_TO_HOST,
                                       DPC_NO_DEPS);
        for (int j = 0; j < p; j++)
            staged[j] = j < r ? lo : j > r ? hi : DPC_STEP_NONE;
    }
    /* round 1: contributions to their owners */
    for (int k = 1; k < p; k++) {
        int j = (r + k) % p;     /* staggered: not everyone at rank 0 first */
        sent[j] = len[j] ? dpc_sched_send(s, j, TAG_CONTRIB, in + off[j], len[j],
                                          DPC_AFTER(staged[j]))
                         : DPC_STEP_NONE;
    }
    sent[r] = DPC_STEP_NONE;
    /* x[k]: the contribution of rank r+k */
    x[0] = dev ? dev->own + off[r] : in + off[r];
    ready[0] = DPC_STEP_NONE;
    for (int k = 1; k < p; k++) {
        x[k] = slots + (size_t)(k - 1) * len[0];
        ready[k] = len[r] ? dpc_sched_recv(s, (r + k) % p, TAG_CONTRIB, (void *)x[k], len[r],
                                           DPC_NO_DEPS)
                          : DPC_STEP_NONE;
    }
    /* the own block, and round 2: it to everyone */
    if (len[r]) {
        char *own_out = dev ? dev->out + off[r] : out + off[r];
        dpc_step_id_t fin = dpc_owner_reduce_chain(s, dev != NULL, own_out, x, ready, p,
                                         len[r] / es, a);
        if (dev)
            fin = dpc_sched_device_copy(s, out + off[r], own_out, len[r], DPC_TO_HOST,
                                        DPC_AFTER(fin));
        for (int k = 1; k < p; k++)
            dpc_sched_send(s, (r + k) % p, TAG_RESULT, out + off[r], len[r], DPC_AFTER(fin));
    }
    for (int j = 0; j < p; j++) {
        if (j == r || !len[j])
            continue;
        /* in place, the result lands where the contribution was sent from
         * (and on a device rank, the device block was staged from) */
        dpc_step_id_t got = dpc_sched_recv(s, j, TAG_RESULT, out + off[j], len[j],
                                           DPC_AFTER(sent[j], staged[j]));
        if (dev)
            dpc_sched_device_copy(s, dev->out + off[j], out + off[j], len[j], DPC_TO_DEVICE,
                                  DPC_AFTER(got));
    }
    free(x);
    free(ready);
    free(off);
    free(len);
    return DPC_OK;
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    return dpc_allreduce_owner_build(a, s, NULL);
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double p = a->size, n = (double)(a->count * elsize(a));
    return 2 * (p - 1) * msg_alpha(a, c, n / p) + 2 * (p - 1) / p * n * c->beta +
           (p - 1) / p * n * (c->gamma + c->beta_reread);
}

/* Every block but the own one goes out once as a contribution, and the own
 * block goes to each of the p-1 others. */
static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    size_t es = elsize(a), n = a->count * es, mine = part_len(a->count, a->size, r) * es;
    return a->size > 1 ? (uint64_t)(n - mine) + (uint64_t)(a->size - 1) * mine : 0;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    uint64_t m = 0;
    for (int j = 0; j < a->size && a->size > 1; j++)
        if (part_len(a->count, a->size, j))
            m += j == r ? (uint64_t)(a->size - 1) : 1;
    return m;
}

/* Not in the registry: the model never picks it for host buffers (with no
 * segments, its reduction cannot overlap its transfers as the ring's does);
 * the device pipeline uses it by name. */
const dpc_algo_t dpc_algo_allreduce_owner = {
    .name = "owner", .coll = DPC_ALLREDUCE, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
