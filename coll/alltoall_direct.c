/*
 * All-to-all (equal blocks), direct (one-sided), one transfer per peer
 * (direct.h), either way:
 *  - pull: every rank exposes its send buffer and reads block r of each
 *    peer's straight into block q of its output;
 *  - push (not in place, and calls whose output is from a->push_min up to
 *    a->push_max bytes, direct_pushes, and at most DPC_ALLTOALL_PUSH_UP_TO):
 *    every rank exposes its output and writes its block q straight into
 *    block r of peer q's.
 * Every rank takes the same way.
 *
 * Why push: on a machine where a core writes into another process's pages
 * faster than it reads from them (this project's VM: 2 ranks, dpcoll_bench
 * -t, 1.13-1.42x faster pushing at 256 KiB-4 MiB in most runs, no faster
 * beyond on reused buffers made of huge pages: DPC_ALLTOALL_PUSH_UP_TO;
 * docs/bench/s42) the same copy costs less; DPCOLL_PUSH_MAX caps it where
 * reading is faster (src/dpc_config.h).
 *
 * In place the send buffer is the output: a peer may still read block q
 * of it while this rank would overwrite it with q's data, so the reads land
 * in scratch and are copied into place once every peer has said it is done
 * (in place never pushes: a peer's write into block q could land before
 * this rank has sent what was there).
 *
 * Restrictions: host memory on a transport with one-sided access; equal
 * counts (a rank does not know where a peer keeps its block in alltoallv:
 * send displacements are each rank's own).
 * Cost (n = bytes each rank receives): (p-1) (2 alpha + alpha_get) + (p-1)/p n beta + n/p
 * beta (the own block's copy, not in place); pushing, the bytes written to
 * peers at DPC_PUSH_BETA_SCALE of beta.
 * Messages per rank: (p-1) descriptors and (p-1) "done".
 */
#include "config.h"
#include "direct.h"

static bool pushes(const dpc_coll_args_t *a)
{
    return !a->in_place && direct_pushes(a) && dpc_coll_bytes(a) <= DPC_ALLTOALL_PUSH_UP_TO;
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank;
    size_t blk = a->count * elsize(a), n = blk * (size_t)p;
    const char *in = input_of(a);
    char *out = a->rbuf;
    if (blk == 0)
        return DPC_OK;
    if (p == 1) {
        if (!a->in_place)
            dpc_sched_copy(s, out, in, blk, DPC_NO_DEPS);
        return DPC_OK;
    }
    bool push = pushes(a);
    char *dst = a->in_place ? dpc_sched_scratch(s, n) : out;
    direct_t d;
    /* pushing, peers write into our output (each at its own block) */
    void *bufs[1] = {push ? (void *)out : (void *)in};
    dpc_step_id_t *moves = malloc(sizeof(dpc_step_id_t) * (size_t)p);
    if (!dst || !moves || direct_exchange(&d, s, p, r, bufs, &n, 1) != DPC_OK) {
        free(moves);
        return DPC_ERR_NOMEM;
    }
    int nr = 0;
    dpc_step_id_t own = DPC_STEP_NONE;   /* (our transfers after it: direct.h) */
    if (!a->in_place)
        moves[nr++] = own = dpc_sched_copy(s, out + (size_t)r * blk, in + (size_t)r * blk, blk,
                                           DPC_NO_DEPS);
    for (int i = 1; i < p; i++) {
        int q = (r + i) % p;
        if (push)
            moves[nr++] = dpc_sched_put(s, q, direct_desc(&d, q, 0), (size_t)r * blk,
                                        in + (size_t)q * blk, blk, DPC_AFTER(d.have[q], own));
        else
            moves[nr++] = dpc_sched_get(s, q, direct_desc(&d, q, 0), (size_t)r * blk,
                                        dst + (size_t)q * blk, blk, DPC_AFTER(d.have[q], own));
    }
    /* "done" after our moves: pulling, we no longer read their send
     * buffers; pushing, our blocks are in their outputs */
    dpc_step_id_t all = direct_finish(&d, dpc_sched_nop(s, moves, nr));
    /* in place: everybody is done with our buffer; our own block stays */
    for (int q = 0; a->in_place && q < p; q++)
        if (q != r)
            dpc_sched_copy(s, out + (size_t)q * blk, dst + (size_t)q * blk, blk, DPC_AFTER(all));
    direct_free(&d);
    free(moves);
    return DPC_OK;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double p = a->size, n = (double)(a->count * elsize(a)) * p;
    double moved = (p - 1) / p * n * c->beta * (pushes(a) ? DPC_PUSH_BETA_SCALE : 1);
    return (p - 1) * (2 * c->alpha + c->alpha_get) + moved + own_copy_cost(a, n / p, c);
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    (void)r;
    return direct_bytes_sent(a, 1);
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    (void)r;
    return direct_msgs_sent(a);
}

const dpc_algo_t dpc_algo_alltoall_direct = {
    .name = "direct", .coll = DPC_ALLTOALL, .flags = DPC_ALGO_ONE_SIDED, .build = build,
    .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
