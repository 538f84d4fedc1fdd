/*
 * When a call runs as a pipeline of chunks (coll/pipeline.c), decided so
 * that every rank decides alike: from the call's size and a job-wide flag
 * alone (dpc_g.pipeline: some rank has the CUDA plugin), never from a
 * rank's own memory, so ranks with host buffers and ranks with device
 * buffers build the same chunks and match message for message; a host rank
 * simply has no copies to make.
 *
 * With DPCOLL_DEVICE_REDUCE on (the default), the chunks run the owner
 * algorithm (coll/allreduce_owner.c) on every rank, so that a rank whose
 * input and output are on its GPU reduces there; whether a rank does is
 * its own affair (its messages are the same either way).
 */
#include "config.h"
#include "shim.h"
#include "stage.h"

/* (not an op that does not commute: the owner chunks combine from the
 * owner's own contribution on, not in rank order; MPI requires the same op
 * on every rank, so they decide alike) */
bool dpc_pipeline_wanted(size_t bytes, int op)
{
    return dpc_g.pipeline && op != DPC_OP_USER_ORDERED &&
           bytes >= 2 * (size_t)DPC_PIPE_CHUNK_BYTES;
}

bool dpc_pipeline_owner(int comm_size)
{
    return dpc_g.pipeline && dpc_g.cfg.device_reduce && comm_size > 1;
}

typedef struct { dpc_comm_t *c; const char *call; } choose_ctx_t;

static const dpc_algo_t *choose_chunk(const dpc_coll_args_t *a, void *ctx)
{
    choose_ctx_t *cc = ctx;
    return dpc_choose(cc->c, a, cc->call);
}

dpc_status_t dpc_pipeline_run_build(dpc_comm_t *c, const char *call, const dpc_coll_args_t *a,
                                    const dpc_pipe_t *pp, dpc_sched_t *s,
                                    const dpc_algo_t **first)
{
    choose_ctx_t cc = {c, call};
    if (a->coll == DPC_REDUCE_SCATTER_BLOCK || a->coll == DPC_REDUCE_SCATTER) {
        *first = a->coll == DPC_REDUCE_SCATTER ? &dpc_algo_reduce_scatter_owner
                                               : &dpc_algo_reduce_scatter_block_owner;
        return dpc_pipeline_rs_build(a, pp, DPC_PIPE_CHUNK_BYTES, s);
    }
    return dpc_pipeline_build(a, pp, DPC_PIPE_CHUNK_BYTES, choose_chunk, &cc, s, first);
}
