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

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank;
    size_t es = elsize(a);
    char *out = a->rbuf;
    const char *src;
    size_t lo, hi;
    dpc_step_id_t prev;
    if (a2a_send_data(a, s, &src, &lo, &hi, &prev) != DPC_OK)
        return DPC_ERR_NOMEM;
    if (a2a_send_len(a, r) > 0 && !a->in_place)
        dpc_sched_copy(s, out + blk_displ(a, r) * es, src + a2a_send_off(a, r),
                       a2a_send_len(a, r), DPC_NO_DEPS);
    for (int k = 1; k < p; k++) {
        int to = mod(r + k, p), from = mod(r - k, p);
        size_t rl = blk_count(a, from) * es;
        size_t sl = a2a_send_len(a, to);
        dpc_step_id_t sdp = sl ? dpc_sched_send(s, to, 0, src + a2a_send_off(a, to), sl,
                                                DPC_AFTER(prev))
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
            t += a2a_send_len(a, i);
    return t;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    uint64_t t = 0;
    for (int i = 0; i < a->size; i++)
        if (i != r)
            t += a2a_send_len(a, i) > 0;
    return t;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    /* messages of a block each (alltoallv: an average block, the same on
     * every rank) */
    double n = 0;
    for (int i = 0; i < a->size; i++)
        n += (double)(sblk_count(a, i) * elsize(a));
    return (a->size - 1) * msg_alpha(a, c, n / a->size) + (double)bytes_sent(a, a->rank) * c->beta +
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
