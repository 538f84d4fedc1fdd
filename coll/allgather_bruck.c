/*
 * Allgather (equal blocks and per-rank counts), Bruck: in scratch, rank r
 * keeps the blocks in rotated order (position i holds block (r+i) mod p). In
 * step k it sends its first min(2^k, p-2^k) positions to rank r-2^k and
 * appends as many from rank r+2^k, so the filled prefix doubles; a final
 * rotation puts every block at its displacement in rbuf. Positions are packed
 * by size, so per-rank counts cost nothing extra.
 *
 * Restrictions: none. Cost (n = total bytes): ceil(log2 p) alpha
 *   + (p-1)/p n beta + n/p beta + n beta (the own block's copy into the
 *   scratch and the final rotation: copies, priced as the copy of a byte
 *   sent is; without the first, measured 2-rank times from 64 KiB up were
 *   30-60% above the model). Latency-optimal for any p, not only powers
 *   of two. With unequal blocks every rank still receives all blocks but
 *   its own and copies its own and the whole, 2n in all; each step's
 *   message (a run of blocks in ring order) is priced by as many of the
 *   largest blocks (shares.h).
 * Bytes sent by rank r: sum over steps d = 2^k < p of the bytes of blocks
 *   r, r+1, .., r+min(d, p-d)-1 (mod p).
 */
#include "config.h"
#include "coll_util.h"
#include "shares.h"

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank;
    size_t *doff, *len;
    char *out = a->rbuf;
    if (rank_blocks(a, 0, &doff, &len))
        return DPC_ERR_NOMEM;
    size_t *pos = malloc(sizeof(size_t) * (size_t)(p + 1));   /* offsets of positions */
    char *w = NULL;
    if (!pos)
        goto done;
    pos[0] = 0;
    for (int i = 0; i < p; i++)
        pos[i + 1] = pos[i] + len[mod(r + i, p)];
    w = dpc_sched_scratch(s, pos[p] + 1);
    if (!w)
        goto done;
    const char *own_src = a->in_place ? out + doff[r] : (const char *)a->sbuf;
    dpc_step_id_t prev = len[r] ? dpc_sched_copy(s, w, own_src, len[r], DPC_NO_DEPS) : DPC_STEP_NONE;
    for (int k = 0, d = 1; d < p; k++, d *= 2) {
        int cnt = d < p - d ? d : p - d;
        size_t sl = pos[cnt], rl = pos[d + cnt] - pos[d];
        /* the first step sends the own block alone: from where it is,
         * while it is also copied into the scratch (neither waits for the
         * other; as the ring and recursive doubling do) */
        dpc_step_id_t sd = !sl ? DPC_STEP_NONE
                           : k == 0 ? dpc_sched_send(s, mod(r - d, p), 0, own_src, sl, DPC_NO_DEPS)
                                    : dpc_sched_send(s, mod(r - d, p), (uint32_t)k, w, sl, DPC_AFTER(prev));
        dpc_step_id_t rv = rl ? dpc_sched_recv(s, mod(r + d, p), (uint32_t)k, w + pos[d], rl, DPC_NO_DEPS)
                              : DPC_STEP_NONE;
        prev = dpc_sched_nop(s, DPC_AFTER(prev, sd, rv));
    }
    for (int i = 0; i < p; i++) {
        int b = mod(r + i, p);
        if (len[b] && !(a->in_place && b == r))
            dpc_sched_copy(s, out + doff[b], w + pos[i], len[b], DPC_AFTER(prev));
    }
done:
    free(pos);
    free(doff);
    free(len);
    return w ? DPC_OK : DPC_ERR_NOMEM;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    shares_t sh = shares_of(a, 0);
    double n = (double)sh.total, bmin = (double)sh.min;
    double t = (n - bmin) * c->beta + bmin * c->beta + n * c->beta;
    for (int d = 1; d < a->size; d *= 2)   /* runs of 1, 2, 4.. blocks */
        t += msg_alpha(a, c, bruck_step_bytes(d < a->size - d ? d : a->size - d, (double)sh.max, n));
    return t;
}

static uint64_t prefix_bytes(const dpc_coll_args_t *a, int r, int cnt)
{
    uint64_t t = 0;
    for (int i = 0; i < cnt; i++)
        t += blk_count(a, mod(r + i, a->size)) * elsize(a);
    return t;
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    uint64_t t = 0;
    for (int d = 1; d < a->size; d *= 2)
        t += prefix_bytes(a, r, d < a->size - d ? d : a->size - d);
    return t;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    uint64_t t = 0;
    for (int d = 1; d < a->size; d *= 2)
        t += prefix_bytes(a, r, d < a->size - d ? d : a->size - d) > 0;
    return t;
}

const dpc_algo_t dpc_algo_allgather_bruck = {
    .name = "bruck", .coll = DPC_ALLGATHER, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
const dpc_algo_t dpc_algo_allgatherv_bruck = {
    .name = "bruck", .coll = DPC_ALLGATHERV, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
