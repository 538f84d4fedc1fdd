/*
 * Pieces of the one-sided ("direct") algorithms, which read what they need
 * straight out of their peers' buffers instead of having it sent:
 *
 *  1. exchange: every rank exposes its regions (input, output...) and sends
 *     their descriptors to every peer;
 *  2. reduce_block: a rank reduces one block of the vector by reading that
 *     block of every peer's input, a chunk at a time, into a small scratch
 *     slot that is still in cache when the reduction reads it (on one node
 *     the read is one kernel copy, process to process, so the data crosses
 *     memory once instead of a send's copy and the reduction's read);
 *  3. finish: a rank tells every peer it is done reading their memory, and
 *     ends only when every peer has told it the same, so no rank returns
 *     (and lets its program reuse the buffers) while another still reads.
 *
 * Step tags: DIRECT_TAG_DESC, DIRECT_TAG_DONE.
 *
 * The own block first: the data-moving ones (allgather(v), alltoall(v))
 * copy a rank's own block into its output before that rank reads or writes
 * any peer's memory (its transfers depend on the copy). The engine issues
 * transfers before local work, and a nonblocking start defers its local
 * work, so a rank whose peers' descriptors were already there made its
 * kernel copy to or from them in the start and its own copy only in the
 * wait; in that order the same two copies took 1.3-1.9x as long at 128
 * KiB-8 MiB (2 ranks, dpcoll_bench -i 1 -t: allgather 512 KiB 53 -> 37 us,
 * alltoall 60 -> 39, alltoallv 95 -> 49; both ranks forced to transfer
 * first, blocking calls too: 31 -> 57 us), and the start returned to the
 * program only after its kernel copy (25 us at 512 KiB). Blocking calls,
 * unforced, measured the same either way (docs/bench/s46/own_copy_first.txt).
 */
#ifndef DPC_DIRECT_H
#define DPC_DIRECT_H

#include "coll_util.h"
#include "dpc_cost.h"

#define DIRECT_TAG_DESC 1u
#define DIRECT_TAG_DONE 2u
#define DIRECT_MAX_REGIONS 2

typedef struct direct {
    dpc_sched_t *s;
    int p, r, nreg;
    size_t stride;              /* bytes of one rank's message: nreg descriptors, extra */
    char *mine;                 /* this rank's message */
    char *theirs;               /* peer q's message: theirs + q * stride */
    dpc_step_id_t *have;        /* have[q]: q's descriptors are here */
    bool *with;                 /* with[q]: q takes part (all peers where NULL) */
} direct_t;

/* Expose regions bufs[0..nreg) and swap descriptors with every peer.
 * Returns DPC_OK or DPC_ERR_NOMEM (the schedule also records errors). */
dpc_status_t direct_exchange(direct_t *d, dpc_sched_t *s, int p, int r, void *const *bufs,
                             const size_t *lens, int nreg);
/* What direct_exchange_some adds to a plain exchange. */
typedef struct direct_more {
    const bool *with;           /* the peers q where with[q] (NULL: all; every rank
                                   must say the same of each pair) */
    const void *extra;          /* extra_bytes of it after the descriptors in every
                                   message (direct_extra) */
    size_t extra_bytes;
    dpc_step_id_t ready;        /* the descriptors sent after it too (the regions'
                                   contents are final then) */
} direct_more_t;
/* The same, with more (NULL: a plain exchange). */
dpc_status_t direct_exchange_some(direct_t *d, dpc_sched_t *s, int p, int r, void *const *bufs,
                                  const size_t *lens, int nreg, const direct_more_t *more);
void direct_free(direct_t *d);

static inline const void *direct_desc(const direct_t *d, int q, int k)
{
    return d->theirs + (size_t)q * d->stride + (size_t)k * DPC_REGION_DESC_MAX;
}

/* Peer q's extra bytes (direct_exchange_some), once have[q] is done. */
static inline const void *direct_extra(const direct_t *d, int q)
{
    return direct_desc(d, q, d->nreg);
}

static inline bool direct_with(const direct_t *d, int q)
{
    return q != d->r && (!d->with || d->with[q]);
}

/* dst[0..count) = the reduction over all ranks of the elements at byte
 * offset `off` of region `reg` (each rank's input); this rank's own copy is
 * `own` (may equal dst). Operands combined in the order own, r+1, r+2, ...;
 * for an op that does not commute (DPC_OP_USER_ORDERED) in rank order. Reads `chunk` bytes at a time per peer into
 * double-buffered scratch. With push_reg >= 0 each finished chunk is also
 * written into every peer's region push_reg at offset push_off (+ the
 * chunk's place), straight from cache. Returns a step done when dst is
 * final and every read and write has landed. */
dpc_step_id_t direct_reduce_block(direct_t *d, int reg, size_t off, const char *own, char *dst,
                                  size_t count, dpc_dtype_t dt, dpc_op_t op, size_t chunk,
                                  int push_reg, size_t push_off);

/* After `reads_done`: tell every peer this rank is done reading, and wait
 * for all of them to say the same (the peers taking part). */
dpc_step_id_t direct_finish(direct_t *d, dpc_step_id_t reads_done);

/* Whether a one-sided call writes each rank's blocks into its peers'
 * outputs (push) instead of having the peers read them (pull): calls whose
 * whole output (dpc_coll_bytes) is from a->push_min to a->push_max bytes.
 * Every rank takes the same way (the sizes and the settings are the same
 * on all). Pushing needs to know where a peer keeps the block: equal
 * blocks say; with displacements (each rank's are its own) the peer's
 * message with its descriptor says (allgather_direct.c). */
static inline bool direct_pushes(const dpc_coll_args_t *a)
{
    size_t total = dpc_coll_bytes(a);
    return total >= a->push_min && total <= a->push_max;
}

/* What a byte pushed costs against beta. A pushed block is read from the
 * writer's own cache, where the program has just written it; a pull, and
 * the ring's and recursive doubling's rendezvous, read it from the peer's.
 * The model priced both alike, so at 2 ranks it took ring (256-512 KiB)
 * and recursive doubling (1 MiB), which the direct allgather beat by
 * 1.18-1.66x in every one of 8 runs of dpcoll_bench -t, blocking and -i 4
 * (1.0-1.12x at 2 MiB, where it read; without -t, 0.93-1.18x:
 * docs/bench/s36). 0.75 is less than those ratios say (the pushed half of
 * the bytes would cost 0.4-0.6), enough to take direct where the prices
 * otherwise tie. */
#define DPC_PUSH_BETA_SCALE 0.75

/* A read or write of another process's memory is a system call that pins
 * the pages it touches, not a message: it costs alpha_get (fitted by
 * dpcoll_tune: about 0.45 us on one node, 1.4 mailbox messages). */

/* Messages and bytes each rank sends: to every peer, nreg descriptors in
 * one message and a "done" (nothing when the call moves no data, or p = 1). */
static inline bool direct_sends(const dpc_coll_args_t *a)
{
    return a->size > 1 && dpc_coll_bytes(a) > 0;
}
static inline uint64_t direct_msgs_sent(const dpc_coll_args_t *a)
{
    return direct_sends(a) ? (uint64_t)(a->size - 1) * 2 : 0;
}
static inline uint64_t direct_bytes_sent(const dpc_coll_args_t *a, int nreg)
{
    return direct_sends(a) ? (uint64_t)(a->size - 1) * (uint64_t)nreg * DPC_REGION_DESC_MAX : 0;
}

#endif
