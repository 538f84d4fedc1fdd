/*
 * All-to-all (equal and per-rank counts), pairwise exchange: in step k = 1..p-1
 * rank r sends its block for r+k and receives the block of r-k, one pair at a
 * time (step k waits for step k-1), so no link carries two messages at once.
 * In place, the send data is first copied out of rbuf.
 *
 * Restrictions: none (any p, any counts: zero-sized blocks send nothing).
 * Cost (n = bytes a rank sends in all): (p-1) alpha + n beta + n/(p-1) beta
 * (the own block's copy, not in place).
 * Bytes sent by rank r, exactly: the sum of its send blocks except its own.
 */
#include "config.h"
#include "coll_util.h"

/* Bytes and offset of the block for rank i in the send data; in place
 * (MPI_IN_PLACE) the send layout is the receive layout. */
static size_t send_len(const dpc_coll_args_t *a, int i)
{
    return (a->in_place ? blk_count(a, i) : sblk_count(a, i)) * elsize(a);
}

static size_t send_off(const dpc_coll_args_t *a, int i)
{
    return (a->in_place ? blk_displ(a, i) : sblk_displ(a, i)) * elsize(a);
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank;
    size_t es = elsize(a);
    char *out = a->rbuf;
    const char *src = a->sbuf;
    dpc_step_id_t prev = DPC_STEP_NONE;
    if (a->in_place) {
        /* the blocks' span [lo, hi): nothing outside it may be read (rbuf
         * itself may lie before the first block's memory: a staged call's
         * host copy starts at its span) */
        size_t lo = SIZE_MAX, hi = 0;
        for (int i = 0; i < p; i++)
            if (send_len(a, i) > 0) {
                lo = send_off(a, i) < lo ? send_off(a, i) : lo;
                hi = send_off(a, i) + send_len(a, i) > hi ? send_off(a, i) + send_len(a, i) : hi;
            }
        if (hi == 0)
            lo = 0;
        char *copy = dpc_sched_scratch(s, hi - lo + 1);
        if (!copy)
            return DPC_ERR_NOMEM;
        if (hi > lo)
            prev = dpc_sched_copy(s, copy, out + lo, hi - lo, DPC_NO_DEPS);
        src = copy - lo;   /* (the send offsets as in rbuf) */
    }
    if (send_len(a, r) > 0 && !a->in_place)
        dpc_sched_copy(s, out + blk_displ(a, r) * es, src + send_off(a, r), send_len(a, r),
                       DPC_NO_DEPS);
    for (int k = 1; k < p; k++) {
        int to = mod(r + k, p), from = mod(r - k, p);
        size_t rl = blk_count(a, from) * es;
        size_t sl = send_len(a, to);
        dpc_step_id_t sdp = sl ? dpc_sched_send(s, to, 0, src + send_off(a, to), sl, DPC_AFTER(prev))
                               : DPC_STEP_NONE;
        /* in place, rbuf may be written once the copy of it is taken */
        dpc_step_id_t rv = rl ? dpc_sched_recv(s, from, 0, out + blk_displ(a, from) * es, rl,
                                               DPC_AFTER(prev))
                              : DPC_STEP_NONE;
        prev = dpc_sched_nop(s, DPC_AFTER(prev, sdp, rv));
    }
    return DPC_OK;
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    uint64_t t = 0;
    for (int i = 0; i < a->size; i++)
        if (i != r)
            t += send_len(a, i);
    return t;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    uint64_t t = 0;
    for (int i = 0; i < a->size; i++)
        if (i != r)
            t += send_len(a, i) > 0;
    return t;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    /* messages of a block each (alltoallv: an average block, the same on
     * every rank) */
    double n = 0;
    for (int i = 0; i < a->size; i++)
        n += (double)(sblk_count(a, i) * elsize(a));
    return (a->size - 1) * msg_alpha(c, n / a->size) + (double)bytes_sent(a, a->rank) * c->beta +
           own_copy_cost(a, n / a->size, c);
}

const dpc_algo_t dpc_algo_alltoall_pairwise = {
    .name = "pairwise", .coll = DPC_ALLTOALL, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
const dpc_algo_t dpc_algo_alltoallv_pairwise = {
    .name = "pairwise", .coll = DPC_ALLTOALLV, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
