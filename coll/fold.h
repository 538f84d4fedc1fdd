/*
 * Folding a non-power-of-two group onto a power of two, for the recursive
 * algorithms: with p' = largest power of two <= p and rem = p - p', each even
 * rank r < 2*rem hands its data to r+1 and sits out; the others continue as
 * "new ranks" 0..p'-1 in rank order. New rank j stands for the original ranks
 * [fold_lo(j), fold_lo(j+1)): two of them for j < rem, one otherwise, so the
 * blocks a new rank is responsible for are contiguous in rank order.
 */
#ifndef DPC_FOLD_H
#define DPC_FOLD_H

#include "part.h"

typedef struct fold {
    int p, pp, rem;     /* p, p' (power of two), p - p' */
    int newrank;        /* -1 for the ranks that sit out */
    int steps;          /* log2(p') */
} fold_t;

static inline fold_t fold_make(int p, int rank)
{
    fold_t f;
    f.p = p;
    f.pp = pow2_floor(p);
    f.rem = p - f.pp;
    f.steps = log2_ceil(f.pp);
    if (rank < 2 * f.rem)
        f.newrank = rank % 2 ? rank / 2 : -1;
    else
        f.newrank = rank - f.rem;
    return f;
}

/* the original rank that plays new rank j */
static inline int fold_rank(const fold_t *f, int j)
{
    return j < f->rem ? 2 * j + 1 : j + f->rem;
}

/* first original rank (block) new rank j stands for; fold_lo(pp) = p */
static inline int fold_lo(const fold_t *f, int j)
{
    return j < f->rem ? 2 * j : j + f->rem;
}

#endif
