/*
 * Reduce-scatter (equal blocks, or per-rank counts) by owners: one chunk of
 * the device pipeline (coll/pipeline.c), elements [e0, e0+n) of every block
 * (of those that long). Rank r sends that
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
#include "dpc_cost.h"
#include "shares.h"

enum { TAG_SLICE = 1 };

dpc_status_t dpc_reduce_scatter_owner_chunk(const dpc_coll_args_t *a, size_t e0, size_t n,
                                            dpc_sched_t *s, const dpc_rs_dev_t *dev, char *res)
{
    int p = a->size, r = a->rank;
    size_t es = elsize(a), *off, *len;
    if (rank_blocks(a, 1, &off, &len))        /* bytes; the blocks back to back */
        return DPC_ERR_NOMEM;
    size_t nr = dpc_in_chunk(len[r] / es, e0, n), rlen = nr * es;
    const char *in = dev ? dev->in : input_of(a);
    char *out = (dev ? dev->out : res ? res : (char *)a->rbuf) + e0 * es;
    dpc_status_t st = DPC_OK;
    const char **x = NULL;
    dpc_step_id_t *ready = NULL;
    if (p == 1) {        /* (the pipeline runs p = 1 on the host: a copy) */
        if (dev)
            st = DPC_ERR_ARG;
        else if (nr && (!a->in_place || res))
            dpc_sched_copy(s, out, in + e0 * es, rlen, DPC_NO_DEPS);
        goto done;
    }
    char *slots = dev ? dev->slots : dpc_sched_scratch(s, (size_t)(p - 1) * rlen);
    x = malloc(sizeof(char *) * (size_t)p);
    ready = malloc(sizeof(dpc_step_id_t) * (size_t)p);
    if (!x || !ready || (!slots && rlen)) {
        st = DPC_ERR_NOMEM;
        goto done;
    }
    /* rank j gets this chunk's slice of block j, as long as block j is
     * (unequal blocks: a short one has no slice in the later chunks, and
     * both ends know it from the counts they share) */
    dpc_step_id_t sent0 = DPC_STEP_NONE;
    for (int k = 1; k < p; k++) {
        int j = (r + k) % p;
        size_t nj = dpc_in_chunk(len[j] / es, e0, n), o = off[j] + e0 * es;
        if (nj == 0)
            continue;
        dpc_step_id_t staged = DPC_STEP_NONE;
        const char *from = in + o;
        if (dev) {
            staged = dpc_sched_device_copy(s, dev->stage + o, dev->in + o, nj * es, DPC_TO_HOST,
                                           DPC_NO_DEPS);
            from = dev->stage + o;
        }
        dpc_step_id_t sent = dpc_sched_send(s, j, TAG_SLICE, from, nj * es, DPC_AFTER(staged));
        if (j == 0)
            sent0 = sent;
    }
    if (nr) {
        x[0] = in + off[r] + e0 * es;
        ready[0] = DPC_STEP_NONE;
        /* in place, equal blocks: the output is block 0's place, and rank
         * 0's slice of it must be gone before the result lands there
         * (unequal blocks in place reduce into res instead: an output
         * longer than block 0 would overwrite later blocks) */
        if (a->in_place && !dev && !res && r != 0)
            ready[0] = sent0;
        for (int k = 1; k < p; k++) {
            x[k] = slots + (size_t)(k - 1) * rlen;
            ready[k] = dpc_sched_recv(s, (r + k) % p, TAG_SLICE, (void *)x[k], rlen, DPC_NO_DEPS);
        }
        dpc_owner_reduce_chain(s, dev != NULL, out, x, ready, p, nr, a);
    }
done:
    free(x);
    free(ready);
    free(off);
    free(len);
    return st;
}

/* The whole call on the host: the pipeline's build (coll/pipeline.c) in
 * one chunk the length of the longest block (it also keeps an unequal
 * in-place result aside until every slice has left). */
static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    size_t most = 0;
    for (int i = 0; i < a->size; i++)
        if (blk_count(a, i) > most)
            most = blk_count(a, i);
    dpc_pipe_t host = {0};
    return dpc_pipeline_rs_build(a, &host, most ? most * elsize(a) : 1, s);
}

/* One round of p-1 messages, reduced from the slots they arrived in, whole
 * (beta_reread, dpc_cost_params_t): the owner of the largest block b
 * receives and reduces (p-1) b (shares.h; equal blocks (p-1)/p n). */
static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double p = a->size, b = (double)shares_of(a, 0).max;
    return (p - 1) * msg_alpha(a, c, b) + (p - 1) * b * (c->beta + c->gamma + c->beta_reread);
}

/* Every other rank's block, in one message each (none for an empty one). */
static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    uint64_t b = 0;
    for (int j = 0; a->size > 1 && j < a->size; j++)
        if (j != r)
            b += blk_count(a, j) * elsize(a);
    return b;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    uint64_t m = 0;
    for (int j = 0; a->size > 1 && j < a->size; j++)
        m += j != r && blk_count(a, j) > 0;
    return m;
}

/* Not in the registry, as the owner allreduce: the device pipeline's. */
const dpc_algo_t dpc_algo_reduce_scatter_block_owner = {
    .name = "owner", .coll = DPC_REDUCE_SCATTER_BLOCK, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
const dpc_algo_t dpc_algo_reduce_scatter_owner = {
    .name = "owner", .coll = DPC_REDUCE_SCATTER, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
