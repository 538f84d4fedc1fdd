/* Allreduce as a pipeline of chunks (see dpc_coll.h). */
#include "config.h"
#include "dpc_coll.h"

dpc_status_t dpc_pipeline_build(const dpc_coll_args_t *a, const dpc_pipe_t *pp,
                                size_t chunk_bytes, dpc_choose_fn choose, void *ctx,
                                dpc_sched_t *s, const dpc_algo_t **first)
{
    size_t es = dpc_dtype_size(a->dtype), n = a->count;
    if (n == 0 || es == 0)
        return DPC_OK;
    size_t ce = chunk_bytes / es ? chunk_bytes / es : 1;
    if ((n + ce - 1) / ce > DPC_PIPE_MAX_CHUNKS)
        ce = (n + DPC_PIPE_MAX_CHUNKS - 1) / DPC_PIPE_MAX_CHUNKS;
    size_t nchunks = (n + ce - 1) / ce;
    /* each chunk its own share of the step tags: chunks in flight together
     * never match each other's messages */
    uint32_t span = (DPC_STEP_TAG_MAX + 1) / DPC_PIPE_MAX_CHUNKS;
    const char *in = a->in_place ? NULL : (const char *)a->sbuf;
    char *out = a->rbuf;
    for (size_t k = 0; k < nchunks; k++) {
        size_t e0 = k * ce, cnt = n - e0 < ce ? n - e0 : ce, off = e0 * es, len = cnt * es;
        dpc_coll_args_t ak = *a;
        ak.count = cnt;
        ak.sbuf = a->in_place ? NULL : pp->dev_in ? pp->host_in + off : in + off;
        ak.rbuf = pp->dev_out ? pp->host_out + off : out + off;
        /* this chunk's device data to the host first (in place: the output
         * holds the input) */
        dpc_step_id_t gate = DPC_STEP_NONE;
        if (a->in_place && pp->dev_out)
            gate = dpc_sched_device_copy(s, pp->host_out + off, pp->dev_out + off, len,
                                         DPC_TO_HOST, DPC_NO_DEPS);
        else if (!a->in_place && pp->dev_in)
            gate = dpc_sched_device_copy(s, pp->host_in + off, pp->dev_in + off, len,
                                         DPC_TO_HOST, DPC_NO_DEPS);
        const dpc_algo_t *al = choose(&ak, ctx);
        if (!al)
            return DPC_ERR_UNSUPPORTED;
        if (k == 0)
            *first = al;
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
