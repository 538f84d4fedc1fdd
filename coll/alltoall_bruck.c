/*
 * All-to-all (equal counts), Bruck: rotate so that position i holds the block
 * for rank r+i; in step k send every position with bit k set to rank r+2^k
 * (packed into one message) and unpack what arrives from r-2^k into the same
 * positions; after ceil(log2 p) steps position i holds the block from rank
 * r-i, and a final pass puts it at its place in rbuf.
 *
 * Restrictions: equal counts only (a rank relays other ranks' blocks, whose
 * sizes it would not know for alltoallv). Cost (b bytes per block):
 *   ceil(log2 p) alpha + ceil(log2 p) p/2 b beta + 3 p b beta (rotations
 *   and packing: copies, priced as the copy of a byte sent is). Wins for
 *   small blocks and many ranks.
 * Bytes sent by rank r, exactly: b times, summed over steps d = 2^k < p, the
 *   number of positions i in [0, p) with bit d set.
 */
#include "config.h"
#include "coll_util.h"

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank;
    size_t b = a->count * elsize(a);
    char *out = a->rbuf;
    const char *src = input_of(a);
    if (b == 0)
        return DPC_OK;
    if (p == 1) {
        if (!a->in_place)
            dpc_sched_copy(s, out, src, b, DPC_NO_DEPS);
        return DPC_OK;
    }
    /* t: rotated blocks; pk/un: packed send and receive buffers */
    char *t = dpc_sched_scratch(s, (size_t)p * b * 3);
    if (!t)
        return DPC_ERR_NOMEM;
    char *pk = t + (size_t)p * b, *un = pk + (size_t)p * b;
    dpc_step_id_t *rot = malloc(sizeof(dpc_step_id_t) * (size_t)p);
    if (!rot)
        return DPC_ERR_NOMEM;
    for (int i = 0; i < p; i++)
        rot[i] = dpc_sched_copy(s, t + (size_t)i * b, src + (size_t)mod(r + i, p) * b, b, DPC_NO_DEPS);
    dpc_step_id_t phase1 = dpc_sched_nop(s, rot, p);
    free(rot);
    dpc_step_id_t prev = phase1, prev_send = DPC_STEP_NONE;
    for (int k = 0, d = 1; d < p; k++, d *= 2) {
        size_t np = 0;
        dpc_step_id_t packed = dpc_sched_nop(s, DPC_AFTER(prev, prev_send));
        dpc_step_id_t last_pack = packed;
        for (int i = 0; i < p; i++)
            if (i & d)
                last_pack = dpc_sched_copy(s, pk + np++ * b, t + (size_t)i * b, b,
                                           DPC_AFTER(packed, last_pack));
        prev_send = dpc_sched_send(s, mod(r + d, p), (uint32_t)k, pk, np * b, DPC_AFTER(last_pack));
        dpc_step_id_t rv = dpc_sched_recv(s, mod(r - d, p), (uint32_t)k, un, np * b, DPC_AFTER(prev));
        /* unpacking overwrites positions that were packed: after the pack */
        dpc_step_id_t last = dpc_sched_nop(s, DPC_AFTER(rv, last_pack));
        size_t q = 0;
        for (int i = 0; i < p; i++)
            if (i & d)
                last = dpc_sched_copy(s, t + (size_t)i * b, un + q++ * b, b, DPC_AFTER(last));
        prev = last;
    }
    for (int i = 0; i < p; i++)
        dpc_sched_copy(s, out + (size_t)mod(r - i, p) * b, t + (size_t)i * b, b,
                       DPC_AFTER(prev, phase1));
    return DPC_OK;
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    uint64_t t = 0;
    (void)r;
    if (a->size == 1)
        return 0;
    for (int d = 1; d < a->size; d *= 2)
        for (int i = 0; i < a->size; i++)
            t += (i & d) ? a->count * elsize(a) : 0;
    return t;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    (void)r;
    return a->size > 1 && a->count ? (uint64_t)log2_ceil(a->size) : 0;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double p = a->size, b = (double)(a->count * elsize(a)), L = log2_ceil(a->size);
    return L * msg_alpha(a, c, p / 2 * b) + L * p / 2 * b * c->beta + 3 * p * b * c->beta;
}

const dpc_algo_t dpc_algo_alltoall_bruck = {
    .name = "bruck", .coll = DPC_ALLTOALL, .flags = DPC_ALGO_EQUAL_COUNTS_ONLY, .build = build,
    .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
