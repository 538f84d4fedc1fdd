/*
 * Allgather (equal blocks and per-rank counts with displacements), direct
 * (one-sided): every rank exposes its own block and reads every peer's
 * block straight into its output, one read per peer (direct.h).
 *
 * Why: the same one copy per block as a rendezvous send, without the
 * handshake of every message (a ring sends p-1 messages per segment).
 *
 * Restrictions: host memory on a transport with one-sided access; any
 * counts and displacements.
 * Cost (n = total bytes gathered, equal blocks): (p-1) (2 alpha + alpha_get)
 * + (p-1)/p n beta + n/p beta (the own block's copy, not in place): two
 * messages and a read per peer.
 * Messages per rank: (p-1) descriptors and (p-1) "done".
 */
#include "config.h"
#include "direct.h"

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank;
    char *out = a->rbuf;
    size_t *off, *len;
    if (dpc_coll_bytes(a) == 0)
        return DPC_OK;
    if (rank_blocks(a, 0, &off, &len))
        return DPC_ERR_NOMEM;
    const char *mine = a->in_place ? out + off[r] : (const char *)a->sbuf;
    if (!a->in_place && len[r])
        dpc_sched_copy(s, out + off[r], mine, len[r], DPC_NO_DEPS);
    direct_t d;
    void *bufs[1] = {(void *)mine};
    dpc_step_id_t *reads = NULL;
    int nr = 0;
    if (p > 1 && direct_exchange(&d, s, p, r, bufs, &len[r], 1) == DPC_OK &&
        (reads = malloc(sizeof(dpc_step_id_t) * (size_t)p))) {
        for (int i = 1; i < p; i++) {
            int q = (r + i) % p;
            if (len[q])
                reads[nr++] = dpc_sched_get(s, q, direct_desc(&d, q, 0), 0, out + off[q], len[q],
                                            DPC_AFTER(d.have[q]));
        }
        direct_finish(&d, dpc_sched_nop(s, reads, nr));
    } else if (p > 1) {
        dpc_sched_set_error(s, DPC_ERR_NOMEM);
    }
    if (p > 1)
        direct_free(&d);
    free(reads);
    free(off);
    free(len);
    return DPC_OK;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double p = a->size, n = (double)dpc_coll_bytes(a);
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

const dpc_algo_t dpc_algo_allgather_direct = {
    .name = "direct", .coll = DPC_ALLGATHER, .flags = DPC_ALGO_ONE_SIDED, .build = build,
    .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
const dpc_algo_t dpc_algo_allgatherv_direct = {
    .name = "direct", .coll = DPC_ALLGATHERV, .flags = DPC_ALGO_ONE_SIDED, .build = build,
    .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
