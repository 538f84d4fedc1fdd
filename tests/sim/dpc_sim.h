/*
 * In-process simulated transport: p ranks in one process, tag-matched
 * mailboxes, per-rank and per-peer counters of messages and bytes, seeded
 * reordering of deliveries, fault injection, and a virtual clock.
 *
 * Messages are rendezvous: a send's data is read when a matching receive
 * exists and only then does the send complete. An algorithm that reuses a
 * send buffer too early, or relies on buffering that real networks do not
 * promise, fails here.
 */
#ifndef DPC_SIM_H
#define DPC_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include "dpc_coll.h"
#include "dpc_transport.h"

typedef struct dpc_sim dpc_sim_t;

typedef struct dpc_sim_opts {
    uint64_t reorder_seed;   /* 0 = deliver in order; otherwise random order and timing */
    bool per_peer_counters;  /* keep the p x p matrix (memory p*p*16 bytes) */
    /* the program's op for DPC_OP_USER reductions (every rank's schedule) */
    dpc_user_reduce_fn_t user_reduce;
    void *user_ctx;
    /* dpc_sim_run's schedules as a nonblocking call's: local work (copies,
     * reductions) deferred at the start and run in small slices after the
     * transfers each test issues, as when the program's MPI_Wait drives:
     * a transfer missing its dependency on a local step shows */
    bool defer_local;
    /* sends of up to this many bytes can be taken within the call
     * (send_now), their data copied at once as a mailbox does (the
     * schedule engine's way for small messages on one node); 0: no
     * send_now, every message a rendezvous */
    size_t eager_max;
} dpc_sim_opts_t;

dpc_sim_t *dpc_sim_create(int p, const dpc_sim_opts_t *opts);
void dpc_sim_destroy(dpc_sim_t *sim);
dpc_transport_t *dpc_sim_transport(dpc_sim_t *sim, int rank);
int dpc_sim_size(const dpc_sim_t *sim);

/* Move messages in flight to their destinations (all of them, in order; or a
 * random non-empty subset in random order when reordering). Returns how many. */
int dpc_sim_deliver(dpc_sim_t *sim);
/* Monotonic count of everything that happened; unchanged = quiescent. */
uint64_t dpc_sim_events(const dpc_sim_t *sim);
uint64_t dpc_sim_now(const dpc_sim_t *sim);
void dpc_sim_advance(dpc_sim_t *sim, uint64_t ns);
/* Transfers posted and not yet completed (for leak checks). */
int dpc_sim_pending(const dpc_sim_t *sim);

/* Counters of what each rank sent. */
uint64_t dpc_sim_msgs_sent(const dpc_sim_t *sim, int rank);
uint64_t dpc_sim_bytes_sent(const dpc_sim_t *sim, int rank);
uint64_t dpc_sim_bytes_to(const dpc_sim_t *sim, int from, int to);
uint64_t dpc_sim_msgs_to(const dpc_sim_t *sim, int from, int to);
/* One-sided reads a rank made (a get counts as the reader's traffic), and
 * the regions it has exposed now (0 once its schedules are gone). */
uint64_t dpc_sim_gets(const dpc_sim_t *sim, int rank);
uint64_t dpc_sim_bytes_got(const dpc_sim_t *sim, int rank);
uint64_t dpc_sim_bytes_put(const dpc_sim_t *sim, int rank);
int dpc_sim_regions(const dpc_sim_t *sim, int rank);

/* Faults: the k-th (1-based) isend of `rank` fails at once with
 * DPC_ERR_TRANSPORT; the k-th irecv completes with DPC_ERR_TRANSPORT;
 * kill makes `rank` unreachable: every transfer to or from it fails with
 * DPC_ERR_PEER_LOST. */
void dpc_sim_fail_send(dpc_sim_t *sim, int rank, int k);
void dpc_sim_fail_recv(dpc_sim_t *sim, int rank, int k);
void dpc_sim_kill(dpc_sim_t *sim, int rank);
bool dpc_sim_dead(const dpc_sim_t *sim, int rank);

/*
 * Run one collective on every rank: build with `algo` from args[rank], start,
 * drive until each rank is done or failed. When all remaining ranks are stuck
 * (nothing can happen) the virtual clock jumps past timeout_ns so their
 * schedules time out, as a real run's would. Dead ranks do not run.
 * observer (optional) is called twice a round: with 2k after every rank's
 * local work of round k, with 2k+1 after that round's deliveries.
 */
typedef void (*dpc_sim_observer_t)(void *ctx, int round);

/* Device copies for the schedules dpc_sim_run makes (rank r's get ctx[r]);
 * a device stand-in calls dpc_sim_poke when it starts or ends a copy, so
 * the driver sees something happen. */
void dpc_sim_set_device(dpc_sim_t *sim, const dpc_device_ops_t *ops, void **ctx);
void dpc_sim_poke(dpc_sim_t *sim);
const dpc_device_ops_t *dpc_sim_device(const dpc_sim_t *sim, int rank, void **ctx);
/* The user op given at creation (dpc_sim_opts_t), NULL if none. */
dpc_user_reduce_fn_t dpc_sim_user_reduce(const dpc_sim_t *sim, void **ctx);
bool dpc_sim_defers_local(const dpc_sim_t *sim);

dpc_status_t dpc_sim_run(dpc_sim_t *sim, const dpc_algo_t *algo, const dpc_coll_args_t *args,
                         uint64_t timeout_ns, dpc_status_t *status, char **errmsg,
                         dpc_sim_observer_t observer, void *ctx);
/* dpc_sim_run details: status[p] receives each rank's final status; errmsg
 * (if not NULL) receives p malloc'ed descriptions of failures (NULL for ranks
 * that succeeded), to be freed with dpc_sim_free_msgs. The return value is
 * DPC_OK when the run ended (whatever each rank's status), DPC_ERR_STATE if it
 * could not end (stuck with no timeout), or a build/start error. */
void dpc_sim_free_msgs(char **errmsg, int p);

#endif
