/*
 * The two phases of ring algorithms, shared by allreduce_ring,
 * reduce_scatter_ring, allgather_ring and bcast_scatter_allgather.
 *
 * p members sit on a ring; member at position i is rank (i + shift) % p (or
 * members[(i + shift) % p]: a ring over some of a group's ranks) and
 * initially owns block i. Blocks are byte ranges (boff[b], blen[b]) of the
 * caller's buffers; each is cut into segments of at most `seg` bytes, and
 * every segment travels as its own message, so a segment can be forwarded
 * (or reduced and forwarded) as soon as it arrives: the pipeline that keeps
 * both links and the reduction busy on large buffers.
 */
#ifndef DPC_RING_H
#define DPC_RING_H

#include "dpc_sched.h"
#include "dpc_coll.h"

typedef struct ring_phase {
    dpc_sched_t *s;
    int p, me, shift;
    const int *members;          /* the group rank at each position (after the shift);
                                  * NULL: position i is rank i */
    const size_t *boff, *blen;   /* bytes, indexed by block (= owning position) */
    size_t seg;                  /* segment bytes, a multiple of the element size */
    uint32_t tag0;               /* first step tag this phase may use */
    dpc_step_id_t after;         /* every first access waits for this step */
    const char *own_src;         /* allgather: send the own block from here at step 0
                                  * (the input), not from buf; NULL = from buf */
    /* Blocks a position already has before the allgather phase: position
     * pos has blocks [pos, pos + held(pos)) (mod nothing: within 0..p-1).
     * NULL: only its own block. Blocks a receiver has are neither sent to
     * it nor received by it (the scatter of van de Geijn's broadcast leaves
     * whole subtrees behind). */
    int (*held)(int pos, int p);
} ring_phase_t;

/* Pick a segment size: `want` rounded down to whole elements, but large enough
 * that all segments of two phases fit in the step-tag space. */
size_t ring_seg_bytes(size_t want, size_t elsize, int p, const size_t *blen);
/* Number of step tags one phase uses. */
uint32_t ring_phase_tags(const ring_phase_t *rp);

/*
 * Reduce-scatter phase: p-1 steps; at step k a member sends block me-k-1 to
 * the right and receives block me-k-2 from the left, reducing it with its own
 * input (received partial on the left: the same order on every run). After
 * it, the member holds the reduction of block `me` in `out`.
 *   in:    the member's input, whole-vector layout
 *   accum: whole-vector layout buffer for partial results (may be `in`), or
 *          NULL to keep partials in schedule scratch
 * Returns a step that completes when the phase is done.
 */
dpc_step_id_t ring_reduce_scatter_phase(const ring_phase_t *rp, const char *in, char *accum,
                                        char *out, dpc_dtype_t dt, dpc_op_t op);

/*
 * Allgather phase: p-1 steps; at step k a member forwards block me-k to the
 * right and receives block me-k-1 from the left, straight into buf.
 * Returns a step that completes when the phase is done.
 */
dpc_step_id_t ring_allgather_phase(const ring_phase_t *rp, char *buf);

/*
 * The ring's order for a's ranks when they are on several nodes (a->node):
 * each node's ranks together, in rank order, nodes in their order, so that
 * a ring crosses between nodes once a node whatever the placement. (Dealt
 * round-robin, as mpiexec deals ranks over hosts named without slot
 * counts, a ring in rank order crosses at every hop, and each node's link
 * carries all its ranks' ring traffic where one rank's would do.) Sets
 * *order to the p ranks by position (to free) and *pos to rank r's
 * position; *order NULL where that is rank order (one node, or nodes of
 * consecutive ranks), *pos then r. -1: out of memory.
 */
int ring_node_order(const dpc_coll_args_t *a, int r, int **order, int *pos);
/* The same order one rank at a time, with nothing allocated (the traffic
 * formulas, which ask for one or two ranks): rank r's position, and the
 * rank at position pos (O(p) and O(p * nodes)). */
int ring_position(const dpc_coll_args_t *a, int r);
int ring_member(const dpc_coll_args_t *a, int pos);
/* Per-rank byte blocks rearranged by position (off[i], len[i] become
 * rank order[i]'s); nothing when order is NULL. -1: out of memory. */
int ring_blocks_by_position(const int *order, int p, size_t *off, size_t *len);

/* Messages one member sends in each phase, closed form: the reduce-scatter
 * phase sends every block but its own, the allgather phase every block but
 * those its right neighbour has (its own, or with `held` its held range;
 * NULL held = own block only); each block as its segments. (The bytes are in
 * each algorithm's own formula.) */
uint64_t ring_rs_phase_msgs(int p, int me, const size_t *blen, size_t seg);
uint64_t ring_ag_phase_msgs(int p, int me, const size_t *blen, size_t seg, int (*held)(int, int));

#endif
