/*
 * Reduce-scatter (equal blocks) by owners: one chunk of the device pipeline
 * (coll/pipeline.c), elements [e0, e0+n) of every block. Rank r sends that
 * slice of block j to rank j, receives the slice of block r from every
 * peer into pinned slots, and reduces them into its output, its own slice
 * first (x_r op x_{r+1} op ... op x_{r-1}, indices mod p; the ops are
 * commutative). One round of p-1 messages, (p-1)/p of the input sent, as
 * in any reduce-scatter. On a device rank the slices for the peers are
 * copied to pinned memory first, the reduction runs on the GPU reading the
 * slots where they arrived, and the result stays on the device: nothing is
 * copied back. A rank with host buffers sends and receives the same
 * messages and reduces on the host, so ranks may mix.
 */
#include "config.h"
#include "coll_util.h"
#include "owner.h"

enum { TAG_SLICE = 1 };

dpc_status_t dpc_reduce_scatter_owner_chunk(const dpc_coll_args_t *a, size_t e0, size_t n,
                                            dpc_sched_t *s, const dpc_rs_dev_t *dev)
{
    int p = a->size, r = a->rank;
    size_t es = elsize(a), len = n * es, count = a->count;
    if (n == 0)
        return DPC_OK;
    const char *in = dev ? dev->in : input_of(a);
    char *out = (dev ? dev->out : (char *)a->rbuf) + e0 * es;
    if (p == 1) {        /* (the pipeline runs p = 1 on the host: a copy) */
        if (dev)
            return DPC_ERR_ARG;
        if (!a->in_place)
            dpc_sched_copy(s, out, in + e0 * es, len, DPC_NO_DEPS);
        return DPC_OK;
    }
    char *slots = dev ? dev->slots : dpc_sched_scratch(s, (size_t)(p - 1) * len);
    const char **x = malloc(sizeof(char *) * (size_t)p);
    dpc_step_id_t *ready = malloc(sizeof(dpc_step_id_t) * (size_t)p);
    if (!x || !ready) {
        free(x);
        free(ready);
        return DPC_ERR_NOMEM;
    }
    dpc_step_id_t sent0 = DPC_STEP_NONE;
    for (int k = 1; k < p; k++) {
        int j = (r + k) % p;
        size_t off = ((size_t)j * count + e0) * es;
        dpc_step_id_t staged = DPC_STEP_NONE;
        const char *from = in + off;
        if (dev) {
            staged = dpc_sched_device_copy(s, dev->stage + off, dev->in + off, len, DPC_TO_HOST,
                                           DPC_NO_DEPS);
            from = dev->stage + off;
        }
        dpc_step_id_t sent = dpc_sched_send(s, j, TAG_SLICE, from, len, DPC_AFTER(staged));
        if (j == 0)
            sent0 = sent;
    }
    x[0] = in + ((size_t)r * count + e0) * es;
    ready[0] = DPC_STEP_NONE;
    /* in place, the output is block 0's place: rank 0's slice of it must
     * be gone before the result lands there */
    if (a->in_place && !dev && r != 0)
        ready[0] = sent0;
    for (int k = 1; k < p; k++) {
        x[k] = slots + (size_t)(k - 1) * len;
        ready[k] = dpc_sched_recv(s, (r + k) % p, TAG_SLICE, (void *)x[k], len, DPC_NO_DEPS);
    }
    dpc_owner_reduce_chain(s, dev != NULL, out, x, ready, p, n, a);
    free(x);
    free(ready);
    return DPC_OK;
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    return dpc_reduce_scatter_owner_chunk(a, 0, a->count, s, NULL);
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double p = a->size, n = (double)(a->count * elsize(a)) * p;
    return (p - 1) * c->alpha + (p - 1) / p * n * (c->beta + c->gamma);
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    (void)r;
    return a->size > 1 ? (uint64_t)(a->size - 1) * a->count * elsize(a) : 0;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    (void)r;
    return a->size > 1 && a->count ? (uint64_t)(a->size - 1) : 0;
}

/* Not in the registry, as the owner allreduce: the device pipeline's. */
const dpc_algo_t dpc_algo_reduce_scatter_block_owner = {
    .name = "owner", .coll = DPC_REDUCE_SCATTER_BLOCK, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
