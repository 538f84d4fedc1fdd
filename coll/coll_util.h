/* Small helpers the algorithm files share. */
#ifndef DPC_COLL_UTIL_H
#define DPC_COLL_UTIL_H

#include <stdlib.h>
#include "dpc_coll.h"
#include "dpc_config.h"
#include "dpc_cost.h"
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

/* The largest message that goes without a rendezvous in this call's job
 * (dpc_coll_args_t's eager_max). */
static inline size_t eager_max(const dpc_coll_args_t *a)
{
    return a->eager_max ? a->eager_max : DPC_DEFAULT_SHM_MAX;
}

/* The start-up cost of one message of `bytes` (cost model): alpha up to the
 * job's eager limit (through the mailboxes), alpha_rndv beyond it (on one
 * node libdpcoll's own rendezvous: a record saying where the buffer is, the
 * receiver's kernel copy and a record back, which dpcoll_tune fits on its
 * own: 3-4 us on this VM in session 31 against 0.35 us for a mailbox
 * record). The job's limit, not a constant: with DPCOLL_SHM_MAX=8192 a
 * 32 KiB message is a rendezvous, and the model must price it as one. */
static inline double msg_alpha(const dpc_coll_args_t *a, const dpc_cost_params_t *c, double bytes)
{
    return bytes > (double)eager_max(a) ? c->alpha_rndv : c->alpha;
}

/* The segment of the reducing rings (allreduce, reduce-scatter) for
 * blocking calls whose vector (dpc_coll_bytes) is at most up_to bytes:
 * DPCOLL_SEG_BYTES where set; else, where the job's mailboxes carry 64 KiB
 * (their default and most), the largest message they carry; else, and for
 * larger or nonblocking calls, DPC_DEFAULT_SEG_BYTES, a rendezvous each. A 64 KiB segment through the
 * mailboxes costs a record's start-up (alpha, under 1 us) where a larger one
 * pays the rendezvous's (alpha_rndv, 4-5 us), the sender copies the next one
 * in while the receiver copies the last one out, and the receiver reduces
 * it from its cache. At 2 ranks (dpcoll_bench -a auto -t, two builds
 * alternating, speedup over MPICH, medians of 4) the reduce-scatter went
 * 1.62 -> 2.75x at 512 KiB, 1.60 -> 2.25x at 1 MiB, 1.50 -> 2.05x at 8 MiB,
 * the allreduce 1.21 -> 1.39x at 256 KiB, 1.50 -> 1.73x at 1 MiB
 * (docs/bench/s41/reduce_rings_ab.txt). The
 * limits are where that stopped: beyond them the direct algorithms
 * measured faster (allreduce 2-4 MiB by 1.14-1.20x, reduce-scatter 32-64 MiB
 * by 1.18-1.22x), and the model, fitted when every ring segment was a
 * rendezvous, prices a mailbox segment of a large call at nothing (its
 * large sets' alpha is 0) and would choose the ring there. Not the
 * allgather's ring or the bcasts': nothing is reduced, every byte is copied
 * twice through the mailboxes against once by a kernel read, and 64 KiB
 * segments made the allgather 0.80x MPICH at 1 MiB where the direct one
 * made 1.32x. Smaller mailboxes (UCX's 8 KiB with DPCOLL_SHM=0, a
 * DPCOLL_SHM_MAX below 64 KiB) keep the large segments: there the start-ups
 * of many small messages cost more than a rendezvous saves. Nonblocking
 * calls keep them too: several in flight put many segments into a peer's
 * ring before it posts their receives, and each such record is moved aside
 * into heap blocks (a third copy; 8 MPI_Iallreduce of 256 KiB in flight at
 * 3 ranks took 170 fresh pages in 30 rounds where test_mpi_nbc's
 * test_in_flight_scratch_reused allows 64), and only blocking calls were
 * measured faster. Every rank has the same eager limit, vector and kind of
 * call (MPI matches blocking with blocking only), so the same segments. */
static inline size_t reduce_seg_bytes(const dpc_coll_args_t *a, size_t up_to)
{
    size_t e = eager_max(a);
    bool mailbox = !a->seg_bytes && e >= DPC_DEFAULT_SHM_MAX && !a->nonblocking &&
                   dpc_coll_bytes(a) <= up_to;
    return mailbox ? e : dpc_seg_bytes(a);   /* (DPCOLL_SEG_BYTES, or the default) */
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

/* All-to-all(v): the bytes and offset of the block for rank i in the send
 * data; in place (MPI_IN_PLACE) the send layout is the receive layout. */
static inline size_t a2a_send_len(const dpc_coll_args_t *a, int i)
{
    return (a->in_place ? blk_count(a, i) : sblk_count(a, i)) * elsize(a);
}

static inline size_t a2a_send_off(const dpc_coll_args_t *a, int i)
{
    return (a->in_place ? blk_displ(a, i) : sblk_displ(a, i)) * elsize(a);
}

/* All-to-all(v): where the send data are read from, block i at
 * *src + a2a_send_off(a, i), and the span [*lo, *hi) of its blocks (0, 0
 * when all are empty: nothing outside it may be read; rbuf itself may lie
 * before the first block's memory, as a staged call's host copy starts at
 * its span). In place that is a copy of the span taken out of rbuf first
 * (*ready: done once it is; the output may be written after), else sbuf. */
static inline dpc_status_t a2a_send_data(const dpc_coll_args_t *a, dpc_sched_t *s,
                                         const char **src, size_t *lo, size_t *hi,
                                         dpc_step_id_t *ready)
{
    *lo = SIZE_MAX;
    *hi = 0;
    for (int i = 0; i < a->size; i++) {
        size_t len = a2a_send_len(a, i), off = a2a_send_off(a, i);
        if (len > 0) {
            *lo = off < *lo ? off : *lo;
            *hi = off + len > *hi ? off + len : *hi;
        }
    }
    if (*hi == 0)
        *lo = 0;
    *src = a->sbuf;
    *ready = DPC_STEP_NONE;
    if (!a->in_place)
        return DPC_OK;
    char *copy = dpc_sched_scratch(s, *hi - *lo + 1);
    if (!copy)
        return DPC_ERR_NOMEM;
    if (*hi > *lo)
        *ready = dpc_sched_copy(s, copy, (const char *)a->rbuf + *lo, *hi - *lo, DPC_NO_DEPS);
    *src = copy - *lo;   /* (the send offsets as in rbuf) */
    return DPC_OK;
}

/* Segments of one block, for the cost model. */
static inline double seg_count(size_t bytes, size_t seg)
{
    size_t n = nsegs(bytes, seg);
    return n ? (double)n : 1.0;
}

#endif
