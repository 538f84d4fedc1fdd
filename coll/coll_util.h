/* Small helpers the algorithm files share. */
#ifndef DPC_COLL_UTIL_H
#define DPC_COLL_UTIL_H

#include <stdlib.h>
#include "dpc_coll.h"
#include "dpc_config.h"
#include "part.h"

static inline size_t elsize(const dpc_coll_args_t *a)
{
    return dpc_dtype_size(a->dtype);
}

/* The bytes of all the blocks together: size x count, or a v-variant's
 * counts summed (the whole vector of an allgather or a reduce-scatter). */
static inline size_t total_bytes(const dpc_coll_args_t *a)
{
    size_t n = 0;
    for (int i = 0; i < a->size; i++)
        n += blk_count(a, i);
    return n * elsize(a);
}

/* The input of reducing collectives and alltoall: rbuf when in place. */
static inline const char *input_of(const dpc_coll_args_t *a)
{
    return a->in_place ? (const char *)a->rbuf : (const char *)a->sbuf;
}

/* Byte offsets/lengths of an even split of `count` elements into p blocks. */
static inline int even_blocks(size_t count, size_t es, int p, size_t **off_p, size_t **len_p)
{
    size_t *off = malloc(sizeof(size_t) * (size_t)p), *len = malloc(sizeof(size_t) * (size_t)p);
    if (!off || !len) {
        free(off);
        free(len);
        return -1;
    }
    for (int i = 0; i < p; i++) {
        off[i] = part_off(count, p, i) * es;
        len[i] = part_len(count, p, i) * es;
    }
    *off_p = off;
    *len_p = len;
    return 0;
}

/* Byte offsets/lengths of the per-rank blocks of a v-collective
 * (concatenated = true: blocks packed in rank order, as reduce-scatter input). */
static inline int rank_blocks(const dpc_coll_args_t *a, int concatenated, size_t **off_p,
                              size_t **len_p)
{
    int p = a->size;
    size_t es = elsize(a), acc = 0;
    size_t *off = malloc(sizeof(size_t) * (size_t)(p + 1)), *len = malloc(sizeof(size_t) * (size_t)p);
    if (!off || !len) {
        free(off);
        free(len);
        return -1;
    }
    for (int i = 0; i < p; i++) {
        len[i] = blk_count(a, i) * es;
        off[i] = concatenated ? acc : blk_displ(a, i) * es;
        acc += len[i];
    }
    off[p] = acc;    /* total, handy for concatenated layouts */
    *off_p = off;
    *len_p = len;
    return 0;
}

/* The start-up cost of one message of `bytes` (cost model): alpha through
 * the mailboxes, alpha_rndv beyond them (on one node UCX's rendezvous: a
 * request to send and an acknowledgement around the receiver's kernel copy,
 * which dpcoll_tune fits on its own: 2.5-3 us on the reference machine
 * against 0.35 us for a mailbox record). */
static inline double msg_alpha(const dpc_cost_params_t *c, double bytes)
{
    /* (the default mailbox size: the model is the same for every job) */
    return bytes > (double)DPC_DEFAULT_SHM_MAX ? c->alpha_rndv : c->alpha;
}

/* The copy of a rank's own block from its input into place (allgather,
 * alltoall; none in place), average_bytes on average (the same on every
 * rank, as the choice must be). On one node the same core copies it as it
 * copies the blocks it receives, at the same price per byte. */
static inline double own_copy_cost(const dpc_coll_args_t *a, double average_bytes,
                                   const dpc_cost_params_t *c)
{
    return a->in_place ? 0 : average_bytes * c->beta;
}

/* Segments of one block, for the cost model. */
static inline double seg_count(size_t bytes, size_t seg)
{
    size_t n = nsegs(bytes, seg);
    return n ? (double)n : 1.0;
}

#endif
