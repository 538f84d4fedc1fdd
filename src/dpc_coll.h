/*
 * Collective arguments and the algorithm registry.
 *
 * An algorithm is a build function that turns one rank's arguments into a
 * schedule (no transport calls, no blocking, no globals), plus its closed-form
 * cost and traffic. Registering it in coll/registry.c is all it takes to join
 * the selection, the tools and the test matrix.
 */
#ifndef DPC_COLL_H
#define DPC_COLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dpc_sched.h"
#include "dpc_types.h"

typedef enum {
    DPC_ALLREDUCE,
    DPC_REDUCE_SCATTER_BLOCK,   /* equal blocks: count per rank */
    DPC_REDUCE_SCATTER,         /* per-rank counts[] */
    DPC_ALLGATHER,              /* equal blocks: count per rank */
    DPC_ALLGATHERV,             /* counts[], displs[] */
    DPC_BCAST,
    DPC_ALLTOALL,               /* count per pair */
    DPC_ALLTOALLV,              /* scounts/sdispls, counts/displs (receive side) */
    DPC_COLL_COUNT
} dpc_coll_t;

/*
 * One rank's view of a collective. Counts and displacements are in elements
 * of dtype. Which fields matter:
 *   ALLREDUCE            sbuf, rbuf, count (whole vector), op
 *   REDUCE_SCATTER_BLOCK sbuf (p*count), rbuf (count), op
 *   REDUCE_SCATTER       sbuf (sum counts), rbuf (counts[rank]), counts, op
 *   ALLGATHER            sbuf (count), rbuf (p*count)
 *   ALLGATHERV           sbuf (counts[rank]), rbuf, counts, displs
 *   BCAST                rbuf (the buffer), count, root
 *   ALLTOALL             sbuf (p*count), rbuf (p*count)
 *   ALLTOALLV            sbuf, scounts, sdispls, rbuf, counts, displs
 * in_place follows MPI_IN_PLACE: the input is taken from rbuf (allreduce,
 * reduce-scatter: the whole input vector; alltoall: the send data), or for
 * allgather the rank's own block is already at its place in rbuf.
 * counts/displs must be the same on every rank (as MPI requires); scounts and
 * sdispls are this rank's own.
 */
typedef struct dpc_coll_args {
    dpc_coll_t coll;
    int rank, size;
    const void *sbuf;
    void *rbuf;
    bool in_place;
    size_t count;
    const size_t *counts, *displs;
    const size_t *scounts, *sdispls;
    dpc_dtype_t dtype;
    dpc_op_t op;
    int root;
    size_t seg_bytes;   /* pipeline segment size for chunked algorithms (DPCOLL_SEG_BYTES);
                         * 0 = the library's: the mailboxes' largest message for the
                         * reducing rings (reduce_seg_bytes), DPC_DEFAULT_SEG_BYTES for
                         * the others (dpc_seg_bytes) */
    bool one_sided;     /* the transport can read peers' memory (host buffers): the
                         * same on every rank, as the transport and library are */
    size_t push_min, push_max;  /* one-sided allgathers and all-to-alls whose whole output
                         * is from push_min to push_max bytes write each rank's blocks
                         * into its peers' outputs instead of having the peers read
                         * them (DPC_PUSH_MIN, DPCOLL_PUSH_MAX; push_max 0: never) */
    bool nonblocking;   /* the call returns before it completes (nonblocking or
                         * persistent; every rank alike, as MPI requires): a measured
                         * choice may be for one kind of call only (dpc_cost_rule_t) */
    size_t eager_max;   /* the largest message the transport copies through without a
                         * rendezvous (the shared-memory mailboxes' largest, which
                         * DPCOLL_SHM_MAX, DPCOLL_SHM=0 and the job's size set; UCX's
                         * eager limit without them): the transport's, the same on every
                         * rank. The model prices a message beyond it at alpha_rndv
                         * (msg_alpha), and the alltoallv's direct algorithm reads such
                         * blocks. 0: DPC_DEFAULT_SHM_MAX, the one-node default (tools
                         * and tests pricing calls outside a job) */
    /* Where the ranks are: node[i] is rank i's node, numbered 0 .. nnodes-1
     * in the order of each node's lowest rank; node_ranks the ranks on each
     * node when every node has as many, else 0. NULL, 1, size: all on one
     * node. Every rank has the same map (made from what MPI_Init gathered). */
    const int *node;
    int nnodes, node_ranks;
} dpc_coll_args_t;

/* Alpha-beta-gamma (Hockney) cost parameters: a message of n bytes costs
 * alpha + n*beta seconds, reducing n bytes costs n*gamma seconds. */
typedef struct dpc_cost_params {
    double alpha;   /* seconds per message */
    double beta;    /* seconds per byte (1 / bandwidth) */
    double gamma;   /* seconds per byte reduced */
    /* seconds per message beyond the shared-memory mailboxes: on one node
     * libdpcoll's own rendezvous (a record saying where the buffer is, the
     * receiver's kernel copy, a record back), elsewhere UCX's; dearer than
     * a mailbox record and fitted on its own by dpcoll_tune
     * (coll/coll_util.h, msg_alpha) */
    double alpha_rndv;
    /* seconds per call, whatever the algorithm (entering the shim, choosing,
     * building or replaying the schedule, completing it): the same for every
     * algorithm, so it never changes a choice, but without it the model
     * prices a 2-message call at twice a 1-message one (dpcoll_tune fits
     * it; predictions add it: dpc_cost_of) */
    double alpha_call;
    /* seconds per one-sided read or write of a peer's memory (the direct
     * algorithms; on one node a process_vm_readv/writev system call): no
     * message, no handshake, dearer than a mailbox record */
    double alpha_get;
    /* seconds per byte of the smaller of two copies out of the same lines
     * at the same time, on two cores (the direct bcast: the other ranks
     * read the head of the root's buffer while the root writes its tail):
     * how far the second copy is from free. Fitted by dpcoll_tune; 0 (the
     * two copies cost the larger one) where a tune file does not name it */
    double beta_concurrent;
    /* seconds per byte that a reduction reads back of a whole message it
     * received (recursive halving and doubling, Rabenseifner, the owners):
     * the message went to memory as it arrived, and beyond the caches the
     * reduction reads it from there again, where the ring's segments and
     * the direct algorithms' chunks are reduced from cache. Fitted by
     * dpcoll_tune; 0 where a tune file does not name it */
    double beta_reread;
    /* Messages between nodes (a group spread over several: args.nnodes >= 2):
     * seconds per message up to the eager limit and beyond it (UCX's
     * protocols over the network), and seconds per byte. A flat algorithm
     * on such a group is priced with these in place of alpha, alpha_rndv
     * and beta (dpc_cost_across): in nearly every one of its steps some
     * message crosses, and a step lasts as long as its slowest message.
     * An algorithm that knows the nodes (DPC_ALGO_NODES) prices its steps
     * within a node with the others and those between with these.
     * Fitted by dpcoll_tune on a job on several nodes. */
    double alpha_net;
    double alpha_rndv_net;
    double beta_net;
} dpc_cost_params_t;

/* Restrictions an algorithm states about its inputs. */
#define DPC_ALGO_EQUAL_COUNTS_ONLY 0x1u  /* alltoallv: Bruck cannot relay unknown sizes */
#define DPC_ALGO_ONE_SIDED 0x2u          /* reads peers' memory: needs args.one_sided */
/* Combines every element's operands in rank order, x0 op x1 op ... op
 * x(p-1) (any grouping: ops are associative), so it may run an op that does
 * not commute (DPC_OP_USER_ORDERED); _UP_TO_3: only while the folded group
 * has at most two members (p <= 3: the recursive halving's one step) */
#define DPC_ALGO_RANK_ORDER 0x4u
#define DPC_ALGO_RANK_ORDER_UP_TO_3 0x8u
/* Taken wherever it applies, without pricing the others: the collective's
 * costs depend on what each rank alone knows (alltoallv's counts), and the
 * ranks must choose alike */
#define DPC_ALGO_FIRST_CHOICE 0x10u
/* Runs on a group spread over 2 or more nodes with the same number of
 * ranks, 2 or more, on each (args.node, node_ranks) */
#define DPC_ALGO_NODES 0x20u

typedef struct dpc_algo {
    const char *name;
    dpc_coll_t coll;
    unsigned flags;
    dpc_status_t (*build)(const dpc_coll_args_t *a, dpc_sched_t *s);
    /* Predicted time of the whole collective. */
    double (*cost)(const dpc_coll_args_t *a, const dpc_cost_params_t *c);
    /* Closed-form bytes and messages that rank `rank` sends. */
    uint64_t (*bytes_sent)(const dpc_coll_args_t *a, int rank);
    uint64_t (*msgs_sent)(const dpc_coll_args_t *a, int rank);
} dpc_algo_t;

const char *dpc_coll_name(dpc_coll_t c);
int dpc_coll_from_name(const char *name);   /* -1 if unknown */
bool dpc_coll_reduces(dpc_coll_t c);

/* Every registered algorithm; NULL-terminated. */
const dpc_algo_t *const *dpc_algos(void);
const dpc_algo_t *dpc_algo_find(dpc_coll_t c, const char *name);
/* True when the algorithm can run these arguments (flags vs. counts). */
bool dpc_algo_applies(const dpc_algo_t *al, const dpc_coll_args_t *a);

/*
 * Allreduce as a pipeline of chunks (coll/pipeline.c), for device buffers
 * staged through host memory: each chunk is an allreduce of its own, nested
 * in one schedule (dpc_sched_sub_begin), with this rank's device input
 * copied to the host just before its chunk starts and the chunk's result
 * copied back as soon as it is final (DEVICE_COPY steps), so copies towards
 * the host, transfers and copies back of successive chunks overlap. Ranks
 * with host buffers build the same chunks without the copies.
 */
typedef struct dpc_pipe {
    bool on;
    bool owner;              /* chunks run the owner algorithm (below), on every rank
                                alike, so that device ranks can reduce on the device */
    bool dev_reduce;         /* this rank reduces on its device (owner chunks; input and
                                output on the device; the op has a device kernel) */
    const char *dev_in;      /* this rank's device input (not in place), or NULL */
    char *dev_out;           /* its device output (in place: the input too), or NULL */
    char *host_in, *host_out;   /* host memory they are staged through (same offsets) */
    char *slots;             /* dev_reduce: pinned memory for the peers' contributions,
                                dpc_pipeline_slot_bytes */
} dpc_pipe_t;
typedef const dpc_algo_t *(*dpc_choose_fn)(const dpc_coll_args_t *a, void *ctx);
#define DPC_PIPE_MAX_CHUNKS 64
/* a: the whole call (sbuf/rbuf: host buffers, unused where pp has device
 * ones); chunks of chunk_bytes (fewer, larger ones beyond
 * DPC_PIPE_MAX_CHUNKS); choose picks each chunk's algorithm (the same on
 * every rank). *first: the first chunk's. */
dpc_status_t dpc_pipeline_build(const dpc_coll_args_t *a, const dpc_pipe_t *pp,
                                size_t chunk_bytes, dpc_choose_fn choose, void *ctx,
                                dpc_sched_t *s, const dpc_algo_t **first);
/* Pinned bytes pp->slots needs for a call of a (the same chunks). */
size_t dpc_pipeline_slot_bytes(const dpc_coll_args_t *a, size_t chunk_bytes);

/*
 * Allreduce by owners (coll/allreduce_owner.c): rank r reduces block r of
 * everyone's input and sends it to all. With dev, this rank's input and
 * output are on the device: blocks for the peers are staged to pinned
 * memory, the peers' contributions arrive in pinned slots, the device
 * reduces them straight from there (DEVICE_REDUCE steps), and the result
 * travels through pinned memory. Without dev, the same messages with host
 * reductions on a's buffers.
 */
typedef struct dpc_owner_dev {
    const char *own;     /* the input on the device (in place: out) */
    char *out;           /* the output on the device */
    char *stage;         /* pinned, same offsets: the input's blocks for peers */
    char *result;        /* pinned, same offsets: the result's blocks (may be stage) */
    char *slots;         /* pinned: dpc_owner_slot_bytes */
} dpc_owner_dev_t;
dpc_status_t dpc_allreduce_owner_build(const dpc_coll_args_t *a, dpc_sched_t *s,
                                       const dpc_owner_dev_t *dev);
size_t dpc_owner_slot_bytes(size_t count, size_t es, int p);
/* The same as an algorithm (host reductions), for the pipeline and tests. */
extern const dpc_algo_t dpc_algo_allreduce_owner;

/*
 * Reduce-scatter (equal blocks, a->count each, or a->counts) by owners,
 * elements [e0, e0+n) of every block (coll/reduce_scatter_owner.c; a block
 * shorter than that has only what it has): one chunk of the device
 * pipeline. With dev, this rank's input and output are on the device (not
 * in place): slices for the peers are staged to pinned memory, the peers'
 * slices arrive in pinned slots ((p-1) times the own block's slice), and
 * the device reduces into the output. Without dev, host buffers (a's), the
 * result into res when not NULL (the whole block's place; unequal blocks in
 * place need it), else into a->rbuf.
 */
typedef struct dpc_rs_dev {
    const char *in;      /* the input on the device (p blocks) */
    char *out;           /* the output on the device (one block) */
    char *stage;         /* pinned, the input's size and offsets */
    char *slots;         /* pinned, this chunk's */
} dpc_rs_dev_t;
dpc_status_t dpc_reduce_scatter_owner_chunk(const dpc_coll_args_t *a, size_t e0, size_t n,
                                            dpc_sched_t *s, const dpc_rs_dev_t *dev, char *res);
/* All of it, on the host: */
extern const dpc_algo_t dpc_algo_reduce_scatter_block_owner, dpc_algo_reduce_scatter_owner;
/* Reduce-scatter (either form) as a pipeline of such chunks, every rank
 * alike; pp as for the allreduce (dev_reduce: this rank's input and output
 * on the device, not in place; host_in its pinned copy; slots
 * dpc_pipeline_slot_bytes). */
dpc_status_t dpc_pipeline_rs_build(const dpc_coll_args_t *a, const dpc_pipe_t *pp,
                                   size_t chunk_bytes, dpc_sched_t *s);

/* Default pipeline segment in bytes, and the effective one for a call (the
 * reducing rings take reduce_seg_bytes, coll/coll_util.h). */
#define DPC_DEFAULT_SEG_BYTES (256u * 1024u)
static inline size_t dpc_seg_bytes(const dpc_coll_args_t *a)
{
    return a->seg_bytes ? a->seg_bytes : DPC_DEFAULT_SEG_BYTES;
}

#endif
