/* Device to device through CUDA IPC (ipc.c). */
#ifndef DPC_IPC_H
#define DPC_IPC_H

#include "shim.h"
#include "dpc_cuda.h"

/* One collective, every rank's buffers at their data's first byte
 * (true_lb applied). Blocks: allgather, alltoall and reduce_scatter_block
 * move blk_bytes per rank; bcast moves blk_bytes; allreduce count elements
 * of dt (blk_bytes unused); allgatherv and alltoallv counts/displs. */
typedef struct dpc_ipc_call {
    MPI_Comm comm;
    const char *call;
    dpc_coll_t coll;
    const void *sbuf;    /* NULL: in place (and bcast) */
    void *rbuf;
    size_t blk_bytes;
    size_t count;        /* allreduce */
    dpc_dtype_t dt;      /* reductions */
    dpc_op_t op;
    int root;            /* bcast */
    /* allgatherv, alltoallv: each rank's block in the output (counts of
     * elem bytes at displs), and for alltoallv where each peer's block
     * starts in the input (sdispls, of selem bytes) */
    const int *counts, *displs, *sdispls;
    size_t elem, selem;
    bool local_ok;       /* this rank's own conditions hold (contiguous types, a
                            device kernel for the reduction...); its buffers'
                            memory is checked here */
} dpc_ipc_call_t;

/* Whether to try (then every rank of the communicator must call
 * dpc_ipc_try): from what all ranks share alone, the outcomes of earlier
 * blocking attempts on the communicator included (see ipc.c). A
 * nonblocking or persistent call tries from DPC_IPC_NB_MIN bytes (or
 * DPCOLL_IPC_MIN, if more) and not by outcomes: a request's outcome is
 * known on each rank at a different moment, so no later call could decide
 * from it alike on every rank. */
#define DPC_IPC_BACKOFF_MAX 64
#define DPC_IPC_NB_MIN (2u << 20)
bool dpc_ipc_wanted(MPI_Comm comm, const char *call, dpc_coll_t coll, int comm_size,
                    size_t bytes, dpc_mode_t mode);
/* Collective. Blocking: 1: the call ran here, its MPI error code in *err;
 * 0: it did not (on every rank alike): go the usual way. Nonblocking and
 * persistent: the attempt becomes the first part of the request that this
 * thread's next dpc_run makes (ipc_nb.c), and 0 (the call goes on to build
 * its usual job, which runs if the attempt finds it cannot go); 1 with
 * *err set if it cannot even be prepared. */
int dpc_ipc_try(const dpc_ipc_call_t *x, dpc_mode_t mode, int *err);
int dpc_ipc_run(const dpc_ipc_call_t *x, int *err);
void dpc_ipc_fini(void);

/* ---- shared by ipc.c (blocking) and ipc_nb.c (nonblocking) ------------- */

/* What a rank publishes: its buffers, and whether it can go at all. */
typedef struct dpc_ipc_card {
    int32_t ok;
    int32_t pad;
    uint64_t off[2];                          /* input, output: offsets in their allocations */
    unsigned char h[2][DPC_IPC_HANDLE_BYTES]; /* their handles */
    char gpu[32];                             /* the GPU both are on (PCI bus id) */
} dpc_ipc_card_t;

/* Whether this rank can go at all (the first thing its card says): its own
 * conditions hold and both its buffers are on a GPU. */
bool dpc_ipc_may_go(const dpc_ipc_call_t *x, const void *in);
/* The rank's input: a bcast's buffer, an allgatherv in place its own block. */
const void *dpc_ipc_input(const dpc_ipc_call_t *x, int me);
/* Fills this rank's card. Its buffers are ordered after the program's
 * default-stream work: blocking (sync) on the whole-staging stream, waited
 * for here; else on the pipeline queues, which the caller then fences. */
void dpc_ipc_card_fill(const dpc_ipc_call_t *x, const void *in, dpc_ipc_card_t *mine, bool sync);
/* Maps the peers' buffers (bases[2k], bases[2k+1]: k's input and output
 * allocations) and sets ins and outs; for a reduction, checks that this
 * rank's kernels reach every peer's GPU. 0 if either fails here. */
int dpc_ipc_map_peers(const dpc_ipc_call_t *x, const dpc_ipc_card_t *cards, int p, int me,
                      const void *in, const char **ins, char **outs, char **bases);
/* Gives back what dpc_ipc_map_peers mapped (NULL entries skipped). */
void dpc_ipc_unmap(char **bases, int n);

/* Where the device work of a collective goes: onto a stream at once (a
 * blocking call), or into a schedule as steps (a nonblocking one). */
typedef struct dpc_ipc_emit dpc_ipc_emit_t;
struct dpc_ipc_emit {
    /* dst = src, n bytes; after owner `from` said its slice is final
     * (ready), or at any time (from < 0) */
    void (*copy)(dpc_ipc_emit_t *e, int from, void *dst, const void *src, size_t n);
    /* dst = a op b, n elements of the call's type, in order with the
     * call's other reductions */
    void (*reduce)(dpc_ipc_emit_t *e, void *dst, const void *a, const void *b, size_t n);
    /* (allreduce) this rank's reductions are final: its peers may read
     * them. Nonzero: the call is over (the blocking emitter's handshake
     * failed, or another rank's part did) */
    int (*ready)(dpc_ipc_emit_t *e);
};
/* The collective's copies and reductions, each rank's input and output
 * (here: ours as they are, the peers' through their mappings) given. */
typedef struct dpc_ipc_plan {
    int p, me;
    const char **in;
    char **out;
    const uint64_t *at;   /* alltoallv: where each peer's block for us starts */
} dpc_ipc_plan_t;
/* Emits the collective's work: 0; ready's nonzero answer (the rest was not
 * emitted); -1 for a collective that has no plan. */
int dpc_ipc_emit_plan(const dpc_ipc_plan_t *pl, const dpc_ipc_call_t *x, dpc_ipc_emit_t *e);
/* The call ran here (went, or failed): counted for DPCOLL_STATS. */
void dpc_ipc_count(const dpc_ipc_call_t *x, int p, bool went, bool failed);

/* ---- the nonblocking engine's side (ipc_nb.c; run.c calls these) ------- */

/* The attempt dpc_ipc_try left for this thread's dpc_run on comm, taken
 * over (NULL: none). */
dpc_ipc_nb_t *dpc_ipc_take(MPI_Comm comm);
/* A new call on a communicator (not a staged call's inner one): an attempt
 * no request took (its call went elsewhere, or failed) is dropped. Inline:
 * every collective's entry asks, and almost never has one. */
extern DPC_TLS dpc_ipc_nb_t *dpc_tl_ipc_pending;
void dpc_ipc_drop_stale_slow(void);
static inline void dpc_ipc_drop_stale(void)
{
    if (__builtin_expect(dpc_tl_ipc_pending != NULL, 0))
        dpc_ipc_drop_stale_slow();
}
/* Whether an attempt waits for this thread's dpc_run and this rank can go
 * (its conditions hold, its buffers are on a GPU): dpc_stage_pair then
 * leaves the device data where they are until the attempt finds it must
 * fall back (ipc_nb.c copies them in then). A rank that cannot go copies
 * them at once: its attempt will fall back, and its job's prepare (which
 * packs a type with holes at the start) must find them on the host. */
bool dpc_ipc_pending_may_go(void);
/* The same at a start: the card said yes, so the copy waits for a
 * fallback (else dpc_op_start copies in as usual). */
bool dpc_ipc_nb_defers_copy(const dpc_req_t *op);
/* At each start of a request with an attempt, in the program's thread:
 * this rank's card (its buffers ordered after the program's work). */
void dpc_ipc_nb_prepare(dpc_req_t *op);
/* Whether this start tries device to device (a persistent request skips
 * some starts after one fell back: alike on every rank). */
bool dpc_ipc_nb_trying(const dpc_req_t *op);
/* Under the engine lock. start: op->s holds the usual schedule, built and
 * not started; it is kept for a fallback and the handshake starts in its
 * place, on tag_base. next: op->s ended well: the next part (DPC_INPROGRESS),
 * the end of all (DPC_OK), or an error. rewind: before a persistent
 * request's next start, op->s is the usual schedule again. */
dpc_status_t dpc_ipc_nb_start(dpc_req_t *op, uint64_t tag_base);
dpc_status_t dpc_ipc_nb_next(dpc_req_t *op);
void dpc_ipc_nb_rewind(dpc_req_t *op);
/* The request went device to device (its job's finish and staging back
 * have nothing to do). */
bool dpc_ipc_nb_went(const dpc_req_t *op);
/* What the request was doing, for an error message (NULL: its usual
 * schedule). */
const char *dpc_ipc_nb_doing(const dpc_req_t *op);
/* Why it failed, when its device part did here or on a peer (NULL: the
 * schedule says). */
const char *dpc_ipc_nb_why(const dpc_req_t *op);
/* At the request's end (mappings given back; a nonblocking request's
 * spare schedule goes, op->s stays the caller's), and when it goes. */
void dpc_ipc_nb_end(dpc_req_t *op);
void dpc_ipc_nb_free(dpc_req_t *op);

#endif
