/* Allreduce as a pipeline of chunks (see dpc_coll.h). */
#include "config.h"
#include "dpc_coll.h"
#include "part.h"
#include "owner.h"
#include <stdlib.h>

/* Elements per chunk: chunk_bytes, or fewer, larger chunks beyond
 * DPC_PIPE_MAX_CHUNKS. */
static size_t chunk_elems(size_t n, size_t es, size_t chunk_bytes)
{
    size_t ce = chunk_bytes / es ? chunk_bytes / es : 1;
    if ((n + ce - 1) / ce > DPC_PIPE_MAX_CHUNKS)
        ce = (n + DPC_PIPE_MAX_CHUNKS - 1) / DPC_PIPE_MAX_CHUNKS;
    return ce;
}

/* Reduce-scatter: the longest block's elements (chunks cover every block
 * in step: chunk k is elements [k ce, (k+1) ce) of each). */
static size_t rs_longest(const dpc_coll_args_t *a)
{
    size_t n = 0;
    for (int i = 0; i < a->size; i++)
        if (blk_count(a, i) > n)
            n = blk_count(a, i);
    return n;
}

size_t dpc_pipeline_slot_bytes(const dpc_coll_args_t *a, size_t chunk_bytes)
{
    bool rs = a->coll != DPC_ALLREDUCE;
    size_t es = dpc_dtype_size(a->dtype), n = rs ? rs_longest(a) : a->count, total = 0;
    if (n == 0 || es == 0)
        return 0;
    size_t ce = chunk_elems(n, es, chunk_bytes), mine = rs ? blk_count(a, a->rank) : n;
    for (size_t e0 = 0; e0 < n; e0 += ce) {
        size_t cnt = dpc_in_chunk(mine, e0, ce);
        /* allreduce: p-1 contributions to the own block of the chunk;
         * reduce-scatter: p-1 slices of the own block */
        total += !rs ? dpc_owner_slot_bytes(cnt, es, a->size)
                     : (size_t)(a->size > 1 ? a->size - 1 : 0) * cnt * es;
    }
    return total;
}

/* dst = src (bytes) once every step built from step `first` on is done. */
static void copy_after_all(dpc_sched_t *s, int first, void *dst, const void *src, size_t bytes)
{
    int n = dpc_sched_nsteps(s) - first;
    dpc_step_id_t *all = malloc(sizeof(dpc_step_id_t) * (size_t)(n > 0 ? n : 1));
    if (!all) {
        dpc_sched_set_error(s, DPC_ERR_NOMEM);
        return;
    }
    for (int i = 0; i < n; i++)
        all[i] = first + i;
    dpc_sched_copy(s, dst, src, bytes, all, n);
    free(all);
}

dpc_status_t dpc_pipeline_rs_build(const dpc_coll_args_t *a, const dpc_pipe_t *pp,
                                   size_t chunk_bytes, dpc_sched_t *s)
{
    size_t es = dpc_dtype_size(a->dtype), n = rs_longest(a), mine = blk_count(a, a->rank);
    if (n == 0 || es == 0)
        return DPC_OK;
    size_t ce = chunk_elems(n, es, chunk_bytes);
    uint32_t span = (DPC_STEP_TAG_MAX + 1) / DPC_PIPE_MAX_CHUNKS;
    bool dev = pp->dev_reduce && a->size > 1;
    dpc_rs_dev_t d = {.in = pp->dev_in, .out = pp->dev_out, .stage = pp->host_in,
                      .slots = pp->slots};
    /* unequal blocks in place: the result waits aside until every slice of
     * the input has left (this rank's output may reach past block 0) */
    char *res = NULL;
    int first = dpc_sched_nsteps(s);
    if (a->counts && a->in_place && a->size > 1 && mine && !dev &&
        !(res = dpc_sched_scratch(s, mine * es)))
        return DPC_ERR_NOMEM;
    for (size_t k = 0, e0 = 0; e0 < n; k++, e0 += ce) {
        dpc_sched_sub_begin(s, DPC_STEP_NONE, (uint32_t)k * span, span);
        dpc_status_t st = dpc_reduce_scatter_owner_chunk(a, e0, ce, s, dev ? &d : NULL, res);
        dpc_sched_sub_end(s);
        if (st != DPC_OK)
            return st;
        d.slots += (size_t)(a->size - 1) * dpc_in_chunk(mine, e0, ce) * es;
    }
    if (res)
        copy_after_all(s, first, a->rbuf, res, mine * es);
    return DPC_OK;
}

/* One chunk, owner algorithm, this rank reducing on its device: the
 * algorithm makes its own copies (only what travels). */
static dpc_status_t device_chunk(const dpc_coll_args_t *ak, const dpc_pipe_t *pp, size_t off,
                                 char *slots, dpc_sched_t *s)
{
    dpc_owner_dev_t dev = {
        .own = ak->in_place ? pp->dev_out + off : pp->dev_in + off,
        .out = pp->dev_out + off,
        .stage = ak->in_place ? pp->host_out + off : pp->host_in + off,
        .result = pp->host_out + off,
        .slots = slots,
    };
    return dpc_allreduce_owner_build(ak, s, &dev);
}

dpc_status_t dpc_pipeline_build(const dpc_coll_args_t *a, const dpc_pipe_t *pp,
                                size_t chunk_bytes, dpc_choose_fn choose, void *ctx,
                                dpc_sched_t *s, const dpc_algo_t **first)
{
    size_t es = dpc_dtype_size(a->dtype), n = a->count;
    if (n == 0 || es == 0)
        return DPC_OK;
    size_t ce = chunk_elems(n, es, chunk_bytes);
    size_t nchunks = (n + ce - 1) / ce;
    /* owner chunks need two ranks (p = 1 is a copy: the chosen algorithm) */
    bool owner = pp->owner && a->size > 1;
    /* each chunk its own share of the step tags: chunks in flight together
     * never match each other's messages */
    uint32_t span = (DPC_STEP_TAG_MAX + 1) / DPC_PIPE_MAX_CHUNKS;
    const char *in = a->in_place ? NULL : (const char *)a->sbuf;
    char *out = a->rbuf, *slots = pp->slots;
    for (size_t k = 0; k < nchunks; k++) {
        size_t e0 = k * ce, cnt = n - e0 < ce ? n - e0 : ce, off = e0 * es, len = cnt * es;
        dpc_coll_args_t ak = *a;
        ak.count = cnt;
        ak.sbuf = a->in_place ? NULL : pp->dev_in ? pp->host_in + off : in + off;
        ak.rbuf = pp->dev_out ? pp->host_out + off : out + off;
        const dpc_algo_t *al = owner ? &dpc_algo_allreduce_owner : choose(&ak, ctx);
        if (!al)
            return DPC_ERR_UNSUPPORTED;
        if (k == 0)
            *first = al;
        if (owner && pp->dev_reduce) {
            dpc_sched_sub_begin(s, DPC_STEP_NONE, (uint32_t)k * span, span);
            dpc_status_t st = device_chunk(&ak, pp, off, slots, s);
            dpc_sched_sub_end(s);
            if (st != DPC_OK)
                return st;
            slots += dpc_owner_slot_bytes(cnt, es, a->size);
            continue;
        }
        /* this chunk's device data to the host first (in place: the output
         * holds the input) */
        dpc_step_id_t gate = DPC_STEP_NONE;
        if (a->in_place && pp->dev_out)
            gate = dpc_sched_device_copy(s, pp->host_out + off, pp->dev_out + off, len,
                                         DPC_TO_HOST, DPC_NO_DEPS);
        else if (!a->in_place && pp->dev_in)
            gate = dpc_sched_device_copy(s, pp->host_in + off, pp->dev_in + off, len,
                                         DPC_TO_HOST, DPC_NO_DEPS);
        dpc_sched_sub_begin(s, gate, (uint32_t)k * span, span);
        dpc_status_t st = al->build(&ak, s);
        dpc_step_id_t done = dpc_sched_sub_end(s);
        if (st != DPC_OK)
            return st;
        if (pp->dev_out)      /* and the result back as soon as it is final */
            dpc_sched_device_copy(s, pp->dev_out + off, pp->host_out + off, len, DPC_TO_DEVICE,
                                  DPC_AFTER(done));
    }
    return DPC_OK;
}
