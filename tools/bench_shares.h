/*
 * The unequal shares dpcoll_bench times the v-variants with, and which
 * dpcoll_tune prices their rows by (one definition for both: a tune file's
 * choices for a v-variant are made on the shares its rows were measured
 * with). Of a vector of T elements, rank q of p gets T (q+1) / (p(p+1)/2),
 * rounded down, the last rank what is left (at 2 ranks a third and two
 * thirds; at the smallest sizes some shares are 0, as they can be in a
 * program).
 */
#ifndef DPC_TOOLS_SHARES_H
#define DPC_TOOLS_SHARES_H

#include <stddef.h>

static inline size_t bench_share(size_t total, int p, int q)
{
    size_t w = (size_t)p * (size_t)(p + 1) / 2, before = 0;
    for (int k = 0; k < q; k++)
        before += total * (size_t)(k + 1) / w;
    return q == p - 1 ? total - before : total * (size_t)(q + 1) / w;
}

#endif
