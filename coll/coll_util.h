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

/* The start-up cost of one message of `bytes` (cost model). On one node a
 * message beyond the mailboxes goes through UCX's rendezvous: a request to
 * send and an acknowledgement (UCX messages, dearer than mailbox records)
 * around the receiver's kernel copy (DIRECT_OP_ALPHAS, coll/direct.h): 1 +
 * 2 + 2 alphas. Measured on the reference machine, 2 ranks: a 16 KiB bcast
 * as one such message 2.57 us, as the direct bcast's two mailbox records
 * each way and one kernel copy (4 alphas) 1.92 us; a 64 KiB alltoall block
 * 5.78 against 5.24 us. */
#define DPC_COST_RNDV_ALPHAS 5.0
static inline double msg_alpha(const dpc_cost_params_t *c, double bytes)
{
    /* (the default mailbox size: the model is the same for every job) */
    return bytes > (double)DPC_DEFAULT_SHM_MAX ? DPC_COST_RNDV_ALPHAS * c->alpha : c->alpha;
}

/* Segments of one block, for the cost model. */
static inline double seg_count(size_t bytes, size_t seg)
{
    size_t n = nsegs(bytes, seg);
    return n ? (double)n : 1.0;
}

#endif
