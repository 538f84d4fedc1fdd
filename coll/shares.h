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

/* What the formulas read of the blocks, in bytes: the smallest, the
 * largest, all of them, and (for a ring of segments of seg bytes; 0: not
 * wanted) the segments on a ring's busiest link, every block's but the
 * smallest one's (each rank passes on every block but one, and the rank
 * left out of the most bytes is the one whose own block is the smallest;
 * equal blocks: (p-1) S). One pass over the counts, sizes scaled once: the
 * engine prices every algorithm of a v-call that does not take the short
 * way (beyond 64 ranks, every call), and at 1024 ranks a pass per figure,
 * with an element size looked up per element, made an allgatherv's
 * selection take 37 us where it took 2.6 before unequal shares were
 * priced; so, 8-10 us against 3-4 in the same minutes (a 2-core VM under
 * load). */
typedef struct shares {
    size_t min, max, total;
    double busiest_segs;
} shares_t;

static inline shares_t shares_of(const dpc_coll_args_t *a, size_t seg)
{
    size_t es = elsize(a), min = blk_count(a, 0), max = 0, total = 0;
    double segs = 0;
    for (int i = 0; i < a->size; i++) {
        size_t c = blk_count(a, i);
        min = c < min ? c : min;
        max = c > max ? c : max;
        total += c;
        if (seg)   /* (a division costs more than the rest: none for one segment) */
            segs += c * es <= seg ? 1 : seg_count(c * es, seg);
    }
    shares_t sh = {.min = min * es, .max = max * es, .total = total * es};
    sh.busiest_segs = seg ? segs - seg_count(sh.min, seg) : 0;
    return sh;
}

/* The largest of the aligned groups of 2^k new ranks (fold.h), in bytes,
 * for k = 0 .. f->steps - 1, into G: what the busiest pair swaps in the
 * step of recursive doubling (allgather: holdings of 2^k new ranks each
 * way) or halving (reduce-scatter: half a range of 2^(k+1)) that moves
 * groups of 2^k. Summed over the steps that is (p'-1)/p' n for equal
 * blocks of new ranks. One pass over the ranks and one over the levels,
 * summing pairs (O(p), not O(p log p): see above). */
static inline void fold_group_bytes_max(const dpc_coll_args_t *a, const fold_t *f, size_t *G)
{
    size_t small[64], *sum = f->pp <= 64 ? small : malloc(sizeof(size_t) * (size_t)f->pp);
    size_t es = elsize(a);
    if (!sum) {   /* (no memory: each level on its own, O(p log p)) */
        for (int k = 0; k < f->steps; k++) {
            G[k] = 0;
            for (int j = 0, g = 1 << k; j + g <= f->pp; j += g) {
                size_t b = 0;
                for (int i = fold_lo(f, j); i < fold_lo(f, j + g); i++)
                    b += blk_count(a, i);
                G[k] = b > G[k] ? b : G[k];
            }
            G[k] *= es;
        }
        return;
    }
    for (int j = 0; j < f->pp; j++) {
        sum[j] = 0;
        for (int i = fold_lo(f, j); i < fold_lo(f, j + 1); i++)
            sum[j] += blk_count(a, i);
    }
    for (int k = 0, groups = f->pp; k < f->steps; k++, groups /= 2) {
        size_t m = 0;
        for (int j = 0; j < groups; j++)
            m = sum[j] > m ? sum[j] : m;
        G[k] = m * es;
        for (int j = 0; j < groups / 2; j++)   /* the next level's groups */
            sum[j] = sum[2 * j] + sum[2 * j + 1];
    }
    if (sum != small)
        free(sum);
}

/* The largest block of the ranks that sit out of a fold (the even ranks
 * below 2 rem), which they hand over or get back; 0 without a fold. */
static inline size_t fold_out_bytes_max(const dpc_coll_args_t *a, const fold_t *f)
{
    size_t m = 0;
    for (int r = 0; r < 2 * f->rem; r += 2)
        if (blk_count(a, r) > m)
            m = blk_count(a, r);
    return m * elsize(a);
}

/* A Bruck step's message, a run of w blocks in ring order, priced by w of
 * the largest blocks bmax (at most the whole vector, n): an upper bound
 * that only decides whether the step's message is a rendezvous, where the
 * exact run would cost a pass over the ranks per step. Equal blocks:
 * w n/p. */
static inline double bruck_step_bytes(int w, double bmax, double n)
{
    return w * bmax < n ? w * bmax : n;
}

#endif
