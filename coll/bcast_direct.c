/*
 * Broadcast, direct (one-sided), the copying split between the root and
 * every other rank: a non-root rank reads the head of the buffer, bytes
 * [0, cut), straight out of the root's memory, while the root writes the
 * tail, [cut, n), straight into that rank's buffer.
 *
 * Why: every other broadcast leaves the copying to the receivers (a
 * rendezvous on one node is the receiver reading the sender's memory), so
 * with two ranks one core copies all n bytes while the root's core waits.
 * Here both copy at once: measured on the reference machine, two 2 MiB
 * cross-memory copies on its two cores take as long as one (12 GB/s each),
 * where one 4 MiB copy takes twice as long.
 *
 * The split, balanced at every size: the root writes n/p bytes into each of
 * the p-1 others ((p-1) n/p in all), and each of them reads the other
 * (p-1) n/p (4 MiB: half 452 us, all 595 us). The tail starts on a
 * 64-byte boundary. Up to session 9 the root wrote everything below 1 MiB
 * (2 ranks, 64-512 KiB: 3.6-18.4 us, 2.2-2.4x MPICH, against the split's
 * 4.7-21.6 us), but that was the benchmark's caches: the root had written
 * the other rank's buffer the call before, and its lines were still in the
 * root's cache. When the other rank reads its result between calls, as a
 * program does (dpcoll_bench -t), the root writing all took 8.7-35 us
 * (0.86-1.2x MPICH, slower than it at 64 and 128 KiB), the split 6.0-25
 * us (1.36-1.74x); the other rank reading all is MPICH's own way (1.0x).
 * (Nor does the root write all up to DPCOLL_PUSH_MAX, as the direct
 * allgather writes: there every rank copies its share either way, here
 * the split puts the second core to work; 1 and 2 MiB written by the root
 * took 64 and 196-202 us against the split's 45-46 and 102.)
 *
 * Synchronisation: the root sends its buffer's descriptor to every rank and
 * receives theirs; when a rank has read its head it says "done" to the
 * root, and the root says "done" to a rank once its tail is written. No
 * rank returns while another may still touch its buffer.
 *
 * Two copies out of the same lines at once are not always two cores' worth:
 * while the root's fresh data sit in its cache, the reads of another core
 * and the root's own writes queue behind each other there (128-512 KiB at 2
 * ranks on the reference machine: the split 7.5-20.9 us against 6.1-19.6
 * for the binomial tree's one copy of everything; from 1 MiB, data beyond
 * the root's cache, 0.47-0.64 of its time). So the smaller of the two
 * copies is priced at beta_concurrent per byte, fitted on its own (0: free;
 * docs/bench/README.md, session 14).
 *
 * Restrictions: host memory on a transport with one-sided access.
 * Cost (n bytes): (p-1) (2 alpha + alpha_get) + the larger of the
 *   root's and another rank's copying, (p-1)/p n, at beta + the smaller at
 *   beta_concurrent.
 * Messages: the root 2 (p-1) (descriptors, "done"), every other rank 2.
 */
#include "config.h"
#include "direct.h"

/* Bytes the root writes into each other rank: the tail of the buffer. */
static size_t tail_bytes(size_t n, int p)
{
    return n / (size_t)p / 64 * 64;
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank, root = a->root;
    size_t n = a->count * elsize(a), tail = tail_bytes(n, p), cut = n - tail;
    char *buf = a->rbuf;
    if (p == 1 || n == 0)
        return DPC_OK;
    char *mine = dpc_sched_scratch(s, DPC_REGION_DESC_MAX);
    char *theirs = dpc_sched_scratch(s, (size_t)p * DPC_REGION_DESC_MAX);
    if (!mine || !theirs)
        return DPC_ERR_NOMEM;
    dpc_step_id_t exposed = dpc_sched_expose(s, buf, n, mine, DPC_NO_DEPS);
    if (r != root) {
        dpc_sched_send(s, root, DIRECT_TAG_DESC, mine, DPC_REGION_DESC_MAX, DPC_AFTER(exposed));
        dpc_step_id_t have = dpc_sched_recv(s, root, DIRECT_TAG_DESC, theirs,
                                            DPC_REGION_DESC_MAX, DPC_NO_DEPS);
        dpc_step_id_t got = dpc_sched_get(s, root, theirs, 0, buf, cut, DPC_AFTER(have));
        dpc_sched_send(s, root, DIRECT_TAG_DONE, NULL, 0, DPC_AFTER(got));
        dpc_sched_recv(s, root, DIRECT_TAG_DONE, NULL, 0, DPC_NO_DEPS);
        return DPC_OK;
    }
    for (int i = 1; i < p; i++) {
        int q = (r + i) % p;
        char *desc = theirs + (size_t)q * DPC_REGION_DESC_MAX;
        dpc_sched_send(s, q, DIRECT_TAG_DESC, mine, DPC_REGION_DESC_MAX, DPC_AFTER(exposed));
        dpc_step_id_t have = dpc_sched_recv(s, q, DIRECT_TAG_DESC, desc, DPC_REGION_DESC_MAX,
                                            DPC_NO_DEPS);
        dpc_step_id_t put = tail ? dpc_sched_put(s, q, desc, cut, buf + cut, tail, DPC_AFTER(have))
                                 : have;
        dpc_sched_send(s, q, DIRECT_TAG_DONE, NULL, 0, DPC_AFTER(put));
        dpc_sched_recv(s, q, DIRECT_TAG_DONE, NULL, 0, DPC_NO_DEPS);
    }
    return DPC_OK;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    int p = a->size;
    size_t n = a->count * elsize(a), tail = p > 1 ? tail_bytes(n, p) : 0;
    /* the slower of the root (p-1 writes) and the others (one read), and
     * what the faster one takes from it */
    double root = (double)(p - 1) * (double)tail, other = (double)(n - tail);
    double most = root > other ? root : other, least = root > other ? other : root;
    return (p - 1) * (2 * c->alpha + c->alpha_get) + most * c->beta + least * c->beta_concurrent;
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    if (!direct_sends(a))
        return 0;
    return (uint64_t)(r == a->root ? a->size - 1 : 1) * DPC_REGION_DESC_MAX;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    if (!direct_sends(a))
        return 0;
    return (uint64_t)(r == a->root ? a->size - 1 : 1) * 2;
}

const dpc_algo_t dpc_algo_bcast_direct = {
    .name = "direct", .coll = DPC_BCAST, .flags = DPC_ALGO_ONE_SIDED, .build = build,
    .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
