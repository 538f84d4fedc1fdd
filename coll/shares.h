/*
 * What unequal blocks cost: the v-variants' counts (MPI_Reduce_scatter's
 * and MPI_Allgatherv's recvcounts, the same on every rank) in the cost
 * formulas.
 *
 * A collective ends when its busiest rank does, and with unequal blocks the
 * busiest rank is not the average one: a ring allgather's rank receives
 * every block but its own, so the rank with the smallest block receives
 * n - min(b), not (p-1)/p n; a direct reduce-scatter's rank reads its own
 * block from each peer, so the rank with the largest does (p-1) max(b).
 * At 2 ranks with shares of 1/3 and 2/3 (dpcoll_bench's v rows) both are
 * 2n/3 where the equal-block formulas priced n/2; at 4 ranks with shares of
 * 1..4 tenths the direct reduce-scatter reads 1.2n against the ring's
 * 0.9n, where the equal-block formulas priced both 0.75n and the choice
 * between them was a toss-up of their start-ups.
 *
 * Every helper gives the equal-block value for equal blocks (n/p, n - n/p,
 * (p-1) n/p), so a v-variant with equal counts is priced as its block
 * collective and the fitted constants keep their meaning. Everything here
 * reads counts every rank has, so every rank prices alike.
 */
#ifndef DPC_SHARES_H
#define DPC_SHARES_H

#include "coll_util.h"
#include "fold.h"

static inline size_t blk_bytes(const dpc_coll_args_t *a, int i)
{
    return blk_count(a, i) * elsize(a);
}

static inline size_t blk_bytes_max(const dpc_coll_args_t *a)
{
    size_t m = 0;
    for (int i = 0; i < a->size; i++)
        if (blk_bytes(a, i) > m)
            m = blk_bytes(a, i);
    return m;
}

static inline size_t blk_bytes_min(const dpc_coll_args_t *a)
{
    size_t m = blk_bytes(a, 0);
    for (int i = 1; i < a->size; i++)
        if (blk_bytes(a, i) < m)
            m = blk_bytes(a, i);
    return m;
}

/* The segments of seg bytes on a ring's busiest link: every block's but
 * the smallest one's (each rank passes on every block but one, and the
 * rank left out of the most bytes is the one whose own block is the
 * smallest). Equal blocks: (p-1) S. */
static inline double ring_busiest_segs(const dpc_coll_args_t *a, size_t seg)
{
    double all = 0;
    for (int i = 0; i < a->size; i++)
        all += seg_count(blk_bytes(a, i), seg);
    return all - seg_count(blk_bytes_min(a), seg);
}

/* The bytes of the blocks new ranks [j, j + g) stand for (fold.h). */
static inline size_t fold_group_bytes(const dpc_coll_args_t *a, const fold_t *f, int j, int g)
{
    size_t n = 0;
    for (int i = fold_lo(f, j); i < fold_lo(f, j + g); i++)
        n += blk_bytes(a, i);
    return n;
}

/* The largest of the aligned groups of g new ranks: what the busiest pair
 * swaps in the step of recursive doubling (allgather: holdings of g new
 * ranks each way) or halving (reduce-scatter: half a range of 2g) that
 * moves groups of g. Summed over g = 1, 2, .., p'/2 that is (p'-1)/p' n
 * for equal blocks of new ranks. */
static inline size_t fold_group_bytes_max(const dpc_coll_args_t *a, const fold_t *f, int g)
{
    size_t m = 0;
    for (int j = 0; j + g <= f->pp; j += g) {
        size_t b = fold_group_bytes(a, f, j, g);
        if (b > m)
            m = b;
    }
    return m;
}

/* The largest block of the ranks that sit out of a fold (the even ranks
 * below 2 rem), which they hand over or get back; 0 without a fold. */
static inline size_t fold_out_bytes_max(const dpc_coll_args_t *a, const fold_t *f)
{
    size_t m = 0;
    for (int r = 0; r < 2 * f->rem; r += 2)
        if (blk_bytes(a, r) > m)
            m = blk_bytes(a, r);
    return m;
}

/* The largest run of w blocks in ring order (blocks r, r+1, .., r+w-1 mod
 * p): a Bruck step's message. Equal blocks: w n/p. */
static inline size_t ring_window_bytes_max(const dpc_coll_args_t *a, int w)
{
    if (!a->counts || w >= a->size)
        return a->counts ? dpc_coll_bytes(a) : (size_t)w * blk_bytes(a, 0);
    size_t b = 0, m;
    for (int k = 0; k < w; k++)
        b += blk_bytes(a, k);
    m = b;
    for (int r = 1; r < a->size; r++) {   /* slide: drop block r-1, add r+w-1 */
        b = b - blk_bytes(a, r - 1) + blk_bytes(a, (r + w - 1) % a->size);
        if (b > m)
            m = b;
    }
    return m;
}

#endif
