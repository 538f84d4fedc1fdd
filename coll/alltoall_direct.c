/*
 * All-to-all (equal blocks), direct (one-sided): every rank exposes its send
 * buffer and reads block r of each peer's straight into block q of its
 * output, one read per peer (direct.h).
 *
 * In place the send buffer is the output: a peer may still read block q
 * of it while this rank would overwrite it with q's data, so the reads land
 * in scratch and are copied into place once every peer has said it is done.
 *
 * Restrictions: host memory on a transport with one-sided access; equal
 * counts (a rank does not know where a peer keeps its block in alltoallv:
 * send displacements are each rank's own).
 * Cost (n = bytes each rank receives): (p-1) (2 alpha + alpha_get) + (p-1)/p n beta + n/p
 * beta (the own block's copy, not in place).
 * Messages per rank: (p-1) descriptors and (p-1) "done".
 */
#include "config.h"
#include "direct.h"

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
    char *dst = a->in_place ? dpc_sched_scratch(s, n) : out;
    direct_t d;
    void *bufs[1] = {(void *)in};
    dpc_step_id_t *reads = malloc(sizeof(dpc_step_id_t) * (size_t)p);
    if (!dst || !reads || direct_exchange(&d, s, p, r, bufs, &n, 1) != DPC_OK) {
        free(reads);
        return DPC_ERR_NOMEM;
    }
    int nr = 0;
    if (!a->in_place)
        reads[nr++] = dpc_sched_copy(s, out + (size_t)r * blk, in + (size_t)r * blk, blk,
                                     DPC_NO_DEPS);
    for (int i = 1; i < p; i++) {
        int q = (r + i) % p;
        reads[nr++] = dpc_sched_get(s, q, direct_desc(&d, q, 0), (size_t)r * blk,
                                    dst + (size_t)q * blk, blk, DPC_AFTER(d.have[q]));
    }
    dpc_step_id_t all = direct_finish(&d, dpc_sched_nop(s, reads, nr));
    /* in place: everybody is done with our buffer; our own block stays */
    for (int q = 0; a->in_place && q < p; q++)
        if (q != r)
            dpc_sched_copy(s, out + (size_t)q * blk, dst + (size_t)q * blk, blk, DPC_AFTER(all));
    direct_free(&d);
    free(reads);
    return DPC_OK;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double p = a->size, n = (double)(a->count * elsize(a)) * p;
    return (p - 1) * (2 * c->alpha + c->alpha_get) + (p - 1) / p * n * c->beta +
           own_copy_cost(a, n / p, c);
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
