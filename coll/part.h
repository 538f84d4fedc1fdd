/* Rank and partition math shared by the algorithms: pure functions, no state. */
#ifndef DPC_PART_H
#define DPC_PART_H

#include <stddef.h>
#include <stdint.h>
#include "dpc_coll.h"

/* Split n items into p nearly equal parts: the first n % p parts get one
 * more. Part i starts at part_off and has part_len items. */
static inline size_t part_len(size_t n, int p, int i)
{
    return n / (size_t)p + ((size_t)i < n % (size_t)p);
}
static inline size_t part_off(size_t n, int p, int i)
{
    size_t q = n / (size_t)p, r = n % (size_t)p;
    return (size_t)i * q + ((size_t)i < r ? (size_t)i : r);
}

static inline int mod(int a, int p)
{
    int r = a % p;
    return r < 0 ? r + p : r;
}

/* Largest power of two <= p (p >= 1). */
static inline int pow2_floor(int p)
{
    int q = 1;
    while (q * 2 <= p)
        q *= 2;
    return q;
}

/* Rank r of p placed on one of k nodes (k >= 1): consecutive ranks
 * together (node r*k/p, as mpiexec fills hosts with slot counts) or,
 * round_robin, dealt one at a time (r % k, as it deals them over hosts
 * named without). Either way the nodes come numbered by their lowest rank.
 * DPCOLL_TEST_NODES, dpcoll_sim -N and the tests' node maps place ranks so. */
static inline int placed_node(int r, int p, int k, int round_robin)
{
    return round_robin ? r % k : (int)((int64_t)r * k / p);
}

/* Labels renumbered by first appearance: out[i] becomes the number of
 * label[i] (0 for label[0]'s, 1 for the next label seen...), labels in
 * [0, nlabels), scratch holding nlabels ints; out may be label. Returns
 * how many labels appear. Why: node maps are numbered by each node's
 * lowest rank, in the world (by host) and in each communicator (by the
 * world's node numbers), so every rank of either numbers them alike. */
static inline int number_by_first_seen(const int *label, int n, int nlabels, int *scratch,
                                       int *out)
{
    int seen = 0;
    for (int k = 0; k < nlabels; k++)
        scratch[k] = -1;
    for (int i = 0; i < n; i++) {
        int k = label[i];
        if (scratch[k] < 0)
            scratch[k] = seen++;
        out[i] = scratch[k];
    }
    return seen;
}

/* Binomial trees over relative ranks v: the lowest set bit of v, which
 * bounds v's subtree; for the root (v == 0) the first power of two >= p. */
static inline int tree_lowbit(int v, int p)
{
    if (v == 0) {
        int b = 1;
        while (b < p)
            b *= 2;
        return b;
    }
    return v & -v;
}

/* ceil(log2 p) and log2 of a power of two. */
static inline int log2_ceil(int p)
{
    int k = 0;
    while ((1 << k) < p)
        k++;
    return k;
}

/* Per-rank block of a v-collective, in elements: equal-block variants use
 * count for every rank and consecutive displacements. */
static inline size_t blk_count(const dpc_coll_args_t *a, int i)
{
    return a->counts ? a->counts[i] : a->count;
}
static inline size_t blk_displ(const dpc_coll_args_t *a, int i)
{
    return a->displs ? a->displs[i] : (size_t)i * a->count;
}
static inline size_t sblk_count(const dpc_coll_args_t *a, int i)
{
    return a->scounts ? a->scounts[i] : a->count;
}
static inline size_t sblk_displ(const dpc_coll_args_t *a, int i)
{
    return a->sdispls ? a->sdispls[i] : (size_t)i * a->count;
}

/* Number of pipeline segments for a message of `bytes` (0 bytes: none). */
static inline size_t nsegs(size_t bytes, size_t seg)
{
    return (bytes + seg - 1) / seg;
}

#endif
