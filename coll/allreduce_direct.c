/*
 * Allreduce, direct (one-sided): rank r owns block r of p. Every rank
 * exposes its input and output; rank r reduces block r by reading that
 * block of each peer's input into cache-sized slots (direct.h), and writes
 * each finished chunk straight from cache into every peer's output. A rank
 * is done when it has said "done" to every peer and heard it from each:
 * then nobody reads its input or writes its output any more.
 *
 * Why: on one node a send costs a copy into the peer, and the reduction
 * then reads that copy back from memory; the result's way back is another
 * copy, from memory. Here the reduction's input arrives in cache by one
 * read, and the result leaves from cache by one write: Rabenseifner's
 * traffic without its round trips through memory, and no rendezvous
 * handshakes (two small messages per peer in all).
 *
 * In place (input = output): rank r writes peer q's buffer only in block r,
 * a chunk right after reading the same chunk there (no one else reads it),
 * and its own buffer only in block r, which no peer reads.
 *
 * Restrictions: host memory on a transport with one-sided access. One
 * rank computes each block, so every rank ends with the same bits; it
 * combines the operands in the order own, r+1, r+2, ..., or for an op that
 * does not commute in rank order (direct.c: DPC_ALGO_RANK_ORDER).
 *
 * Cost (n bytes, S chunks per block): (p-1) (2 alpha + 2 S alpha_get)
 *   + (p-1)/p n (2 beta + gamma): two messages, and a read and a write per
 * chunk and peer (one-sided: alpha_get each); the reads move (p-1)/p n, as
 * the direct reduce-scatter's do (a read is a system call on the reader's
 * core that returns when the bytes are in, as the ring receiver's is), and
 * the writes as much again: the ring's and Rabenseifner's traffic. What it
 * saves is their reading back of what they received: beta_reread.
 * Messages per rank: (p-1) descriptors of two regions and (p-1) "done";
 * the data move by reads and writes, which are not sends.
 */
#include "config.h"
#include "direct.h"

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank;
    size_t es = elsize(a), n = a->count * es;
    char *out = a->rbuf;
    const char *in = input_of(a);
    if (n == 0)
        return DPC_OK;
    if (p == 1) {
        if (in != out)
            dpc_sched_copy(s, out, in, n, DPC_NO_DEPS);
        return DPC_OK;
    }
    direct_t d;
    void *bufs[2] = {(void *)in, out};
    size_t lens[2] = {n, n};
    if (direct_exchange(&d, s, p, r, bufs, lens, 2) != DPC_OK)
        return DPC_ERR_NOMEM;
    size_t off = part_off(a->count, p, r) * es;
    dpc_step_id_t mine = direct_reduce_block(&d, 0, off, in + off, out + off,
                                             part_len(a->count, p, r), a->dtype, a->op,
                                             dpc_seg_bytes(a), 1, off);
    direct_finish(&d, mine);
    direct_free(&d);
    return DPC_OK;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double p = a->size, n = (double)(a->count * elsize(a));
    double S = seg_count((size_t)(n / p), dpc_seg_bytes(a));
    return (p - 1) * (2 * c->alpha + 2 * S * c->alpha_get) +
           (p - 1) / p * n * (2 * c->beta + c->gamma);
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    (void)r;
    return direct_bytes_sent(a, 2);
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    (void)r;
    return direct_msgs_sent(a);
}

const dpc_algo_t dpc_algo_allreduce_direct = {
    .name = "direct", .coll = DPC_ALLREDUCE, .flags = DPC_ALGO_ONE_SIDED | DPC_ALGO_RANK_ORDER,
    .build = build,
    .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
