/*
 * Running one collective on libdpcoll: pick the algorithm (forced, or the
 * cost model), build its schedule over the communicator's UCX transport,
 * progress it to the end without spinning a core, bounded by DPCOLL_TIMEOUT.
 */
#include "dpc_hugepage.h"
#include "config.h"
#include "ipc.h"
#include "shim.h"
#include "dpc_log.h"
#include "stage.h"
#include "lcount.h"
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long a waiting rank polls before it gives the core away: with a core
 * of its own it polls for a while (a partner a few microseconds behind is
 * then met without the ~50 us of a wake-up); with more ranks than cores it
 * yields at once, since its partner may need this very core to catch up.
 * Then a few yields, then sleep on the UCX worker's wakeup fd. */
#define SPIN_NS_DEDICATED 300000u
#define YIELDS 16
/* Slices of local work in nonblocking schedules: small enough that a
 * waiting thread gets the lock and the core soon, large enough that the
 * hand-overs cost little; a 64th of the call's bytes within these bounds. */
#define DPC_NB_SLICE_MIN (256u << 10)
#define DPC_NB_SLICE_MAX (1u << 20)
#define DPC_NB_REMOTE_SLICE (1u << 20)

DPC_TLS MPI_Comm dpc_tl_comm = MPI_COMM_NULL;
DPC_TLS dpc_comm_t *dpc_tl_state;
DPC_TLS unsigned dpc_tl_gen;
DPC_TLS bool dpc_tl_quiet;
DPC_TLS bool dpc_tl_progress_thread;

void dpc_comm_shape(MPI_Comm comm, int *size, int *rank)
{
    const dpc_comm_t *c = dpc_tl_known(comm);
    if (c) {
        *size = c->size;
        *rank = c->rank;
        return;
    }
    PMPI_Comm_size(comm, size);
    PMPI_Comm_rank(comm, rank);
}

int dpc_enter(MPI_Comm comm, dpc_coll_t coll, const char *call, dpc_mode_t mode, int *err)
{
    if (!dpc_g.active) {
        if (!dpc_g.finalizing && dpc_g.world_size)
            dpc_note_pmpi(coll, DPC_WHY_DISABLED);
        return 0;
    }
    if (mode == DPC_PERSISTENT && dpc_g.f08_past_us) {
        dpc_note_pmpi(coll, DPC_WHY_F08);
        return 0;
    }
    if (comm == MPI_COMM_NULL) {
        *err = dpc_raise(comm, MPI_ERR_COMM, "%s: comm is MPI_COMM_NULL", call);
        return -1;
    }
    dpc_ipc_drop_stale();
    /* a communicator we already know is an intracommunicator; remember its
     * state for dpc_comm_get and dpc_comm_shape in this same call */
    void *known;
    int found = 0;
    /* (the same communicator as this thread's last call: no attribute
     * lookup, which was ~5% of a small call) */
    if (dpc_tl_known(comm))
        return 1;
    dpc_tl_gen = __atomic_load_n(&dpc_g.comm_gen, __ATOMIC_ACQUIRE);   /* before the lookup */
    dpc_tl_comm = comm;
    dpc_tl_state = NULL;
    if (PMPI_Comm_get_attr(comm, dpc_g.keyval, &known, &found) == MPI_SUCCESS && found) {
        dpc_tl_state = known;
        return 1;
    }
    int inter = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) {
        *err = dpc_raise(MPI_COMM_NULL, MPI_ERR_COMM, "%s: comm is not a valid communicator", call);
        return -1;
    }
    if (inter) {
        dpc_note_pmpi(coll, DPC_WHY_INTERCOMM);
        return 0;
    }
    return 1;
}

void dpc_note_pmpi(dpc_coll_t coll, dpc_why_t why)
{
    bool lk = dpc_need_lock();
    dpc_lock(lk);
    dpc_g.stats[coll].pmpi++;
    dpc_g.stats[coll].why[why]++;
    dpc_unlock(lk);
}

static DPC_TLS const dpc_algo_t *last_algo;

DPCOLL_API const char *dpcoll_last_algorithm(void)
{
    return last_algo ? last_algo->name : "";
}

/* The registry index of al (-1 for one the registry does not list, such as
 * the device pipeline's owner allreduce); the last answer is kept, as calls
 * repeat their algorithm. */
static int algo_index(const dpc_algo_t *al)
{
    static DPC_TLS const dpc_algo_t *last;
    static DPC_TLS int last_i;
    if (al == last)
        return last_i;
    const dpc_algo_t *const *reg = dpc_algos();
    int i = 0;
    while (i < dpc_g.nalgos && reg[i] != al)
        i++;
    last = al;
    last_i = i < dpc_g.nalgos ? i : -1;
    return last_i;
}

/* First time this signature is seen? (a small open-addressing set) */
#define EXPLAIN_SLOTS 4096
static bool first_time(uint64_t sig)
{
    if (!dpc_g.explained && !(dpc_g.explained = calloc(EXPLAIN_SLOTS, sizeof(uint64_t))))
        return false;
    if (dpc_g.nexplained >= EXPLAIN_SLOTS / 2)
        return false;          /* enough said */
    sig |= 1;                  /* 0 marks an empty slot */
    for (size_t i = sig % EXPLAIN_SLOTS;; i = (i + 1) % EXPLAIN_SLOTS) {
        if (dpc_g.explained[i] == sig)
            return false;
        if (!dpc_g.explained[i]) {
            dpc_g.explained[i] = sig;
            dpc_g.nexplained++;
            return true;
        }
    }
}

/* DPCOLL_EXPLAIN: the choice and every alternative's predicted time. */
static void explain(const dpc_coll_args_t *a, const dpc_algo_t *chosen, const char *call)
{
    uint64_t sig = (uint64_t)a->coll * 0x9E3779B97F4A7C15ull;
    uint64_t parts[] = {(uint64_t)a->size, a->count, (uint64_t)a->dtype, (uint64_t)a->op,
                        (uint64_t)a->in_place, (uint64_t)a->root, a->counts != NULL,
                        a->nonblocking};   /* (a measured choice may differ by kind) */
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        sig = (sig ^ parts[i]) * 0x100000001B3ull;
    /* a v-call's counts, which its prices depend on (the smallest and the
     * largest are what it prints) */
    size_t vmin = SIZE_MAX, vmax = 0;
    for (int i = 0; a->counts && i < a->size; i++) {
        sig = (sig ^ a->counts[i]) * 0x100000001B3ull;
        vmin = a->counts[i] < vmin ? a->counts[i] : vmin;
        vmax = a->counts[i] > vmax ? a->counts[i] : vmax;
    }
    if (a->rank != 0 || !first_time(sig))
        return;
    char line[1024];
    /* (a measured choice: the tune file's, against the prices that follow) */
    const char *why = chosen == dpc_g.cfg.force[a->coll]                ? " (forced)"
                      : chosen == dpc_cost_rule_for(a, &dpc_g.cfg.cost) ? " (the tune file's "
                                                                          "measured choice)"
                                                                        : "";
    /* (a program's op: its elements by their size, the stand-in type's) */
    char what[96];
    if (dpc_op_is_user(a->op))
        snprintf(what, sizeof(what), "%zu-byte elements, a program's op%s",
                 dpc_dtype_size(a->dtype),
                 a->op == DPC_OP_USER_ORDERED ? " (not commutative: rank order)" : "");
    else
        snprintf(what, sizeof(what), "%s", dpc_dtype_name(a->dtype));
    char n[64];   /* (a v-call: all its blocks, and how unequal) */
    if (a->counts)
        snprintf(n, sizeof(n), "%zu (blocks of %zu-%zu)", dpc_coll_bytes(a) / dpc_dtype_size(a->dtype),
                 vmin, vmax);
    else
        snprintf(n, sizeof(n), "%zu", a->count);
    size_t off = (size_t)snprintf(line, sizeof(line), "%s: %s, %d ranks, %s x %s: %s%s;", call,
                                  dpc_coll_name(a->coll), a->size, n, what, chosen->name, why);
    for (const dpc_algo_t *const *al = dpc_algos(); *al && off < sizeof(line); al++)
        if (dpc_algo_applies(*al, a))
            off += (size_t)snprintf(line + off, sizeof(line) - off, " %s %.3g us%s", (*al)->name,
                                    dpc_cost_predict(*al, a, &dpc_g.cfg.cost) * 1e6,
                                    *al == chosen ? " *" : "");
    fprintf(stderr, "libdpcoll explain: %s\n", line);
}

/* The kept choice for these arguments (under this forced algorithm), or
 * NULL. (The communicator fixes size, rank and transport; the remaining
 * inputs of the model are configuration, the same all run long.) */
static const dpc_algo_t *chosen_before(dpc_comm_t *c, const dpc_coll_args_t *a,
                                       const dpc_algo_t *forced)
{
    for (unsigned k = 0; k <= DPC_CHOICE_SLOTS; k++) {
        /* first the slot found last time: a loop of one call */
        unsigned i = k == 0 ? c->choice_last : k - 1;
        if (c->choice[i].al && c->choice[i].coll == (int)a->coll &&
            c->choice[i].count == a->count && c->choice[i].forced == forced &&
            c->choice[i].dtype == (int)a->dtype && c->choice[i].op == (int)a->op &&
            c->choice[i].in_place == a->in_place && c->choice[i].root == a->root &&
            c->choice[i].nonblocking == a->nonblocking) {
            c->choice_last = i;
            return c->choice[i].al;
        }
    }
    return NULL;
}

/* The algorithm the program forced for this collective, if any. Not for
 * libdpcoll's own calls (the device handshakes, dpc_tl_quiet): a program
 * that forces allgather on one rank just before its own allgather must not
 * change the algorithm of the handshake inside another collective that
 * the other ranks, which have not forced it yet, make alike (seen in the
 * fuzzer: a bcast's handshakes ran direct on one rank and ring on another,
 * "message truncated"). */
static const dpc_algo_t *forced_for(dpc_coll_t coll)
{
    return dpc_tl_quiet ? NULL : dpc_g.cfg.force[coll];
}

const dpc_algo_t *dpc_choose(dpc_comm_t *c, const dpc_coll_args_t *a, const char *call)
{
    const dpc_algo_t *forced = forced_for(a->coll);
    /* a call priced before on this communicator: the same choice (the
     * model's inputs are the same), without evaluating it again */
    bool cacheable = !a->counts && !a->scounts && !dpc_g.cfg.explain && !dpc_g.mt;
    const dpc_algo_t *al = cacheable ? chosen_before(c, a, forced) : NULL;
    if (al)
        return al;
    al = forced && dpc_algo_applies(forced, a) ? forced : dpc_cost_select_model(a, &dpc_g.cfg.cost);
    if (cacheable && al) {
        /* in turn over the slots: a signature in use comes back within a
         * few calls, before its slot is taken again */
        unsigned i = c->choice_last = c->choice_next++ % DPC_CHOICE_SLOTS;
        c->choice[i].al = al;
        c->choice[i].forced = forced;
        c->choice[i].coll = (int)a->coll;
        c->choice[i].count = a->count;
        c->choice[i].dtype = (int)a->dtype;
        c->choice[i].op = (int)a->op;
        c->choice[i].in_place = a->in_place;
        c->choice[i].root = a->root;
        c->choice[i].nonblocking = a->nonblocking;
    }
    if (dpc_g.cfg.explain && al && !dpc_tl_quiet) {
        dpc_lock(dpc_g.mt);
        explain(a, al, call);
        dpc_unlock(dpc_g.mt);
    }
    return al;
}

/* The first of the communicator's pools no schedule holds (NULL: all are
 * held, the schedule allocates its own scratch). When the pools hold more
 * than DPC_POOLS_HELD_MAX in all, those beyond the first that no schedule
 * holds give their memory back first: a burst of large calls in flight
 * once should not keep its scratch for the communicator's life. Under the
 * lock whenever nonblocking calls are in flight (dpc_need_lock): they give
 * pools back. */
static dpc_scratch_pool_t *free_pool(dpc_comm_t *c)
{
    size_t held = 0;
    dpc_scratch_pool_t *got = NULL;
    for (int i = 0; i < DPC_COMM_POOLS; i++) {
        held += c->pool[i].held;
        if (!got && !c->pool[i].busy)
            got = &c->pool[i];
    }
    for (int i = 1; held > DPC_POOLS_HELD_MAX && i < DPC_COMM_POOLS; i++)
        if (!c->pool[i].busy) {
            held -= c->pool[i].held;
            dpc_scratch_pool_fini(&c->pool[i]);
        }
    return got;
}

static int error_class(dpc_status_t st)
{
    switch (st) {
    case DPC_ERR_NOMEM: return MPI_ERR_NO_MEM;
    case DPC_ERR_ARG: return MPI_ERR_ARG;
    case DPC_ERR_TRUNCATE: return MPI_ERR_TRUNCATE;
    case DPC_ERR_UNSUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
    default: return MPI_ERR_OTHER;
    }
}

/* A program's reduction function runs only in the program's own threads,
 * inside its MPI calls (the thread that made a blocking call; for a
 * nonblocking or persistent one, the program's MPI_Wait, MPI_Test and the
 * like). In the progress thread it could deadlock against a lock of the
 * program's (an interpreter's), or break the program's assumptions about
 * where its code runs; there such a schedule moves data only, and a
 * reduction waits for the program's next call. */
static bool op_held_here(const dpc_req_t *op)
{
    return dpc_tl_progress_thread && op->job && dpc_op_is_user(op->job->a.op);
}

/* One test of one op (transport: progressing the transport first); the
 * caller holds the lock when locking. */
static void op_test_with(dpc_req_t *op, bool transport)
{
    if (!op->running)
        return;
    dpc_status_t st = op_held_here(op) ? dpc_sched_test_held(op->s)
                      : transport      ? dpc_sched_test(op->s)
                                       : dpc_sched_test_progressed(op->s);
    /* a request that tries device to device first: its next part, if any */
    if (st == DPC_OK && op->ipc)
        st = dpc_ipc_nb_next(op);
    if (st == DPC_INPROGRESS)
        return;
    op->st = st;
    op->running = false;
    __atomic_store_n(&op->done, true, __ATOMIC_RELEASE);   /* after st: dpc_op_ended */
    if (op->mode != DPC_BLOCKING) {
        __atomic_sub_fetch(&dpc_g.nb_active_bytes, op->active_bytes, __ATOMIC_RELAXED);
        __atomic_sub_fetch(&dpc_g.nb_active, 1, __ATOMIC_RELEASE);
    }
}

static void op_test_locked(dpc_req_t *op)
{
    op_test_with(op, true);
}

bool dpc_ops_progress_locked(void)
{
    /* the transport once for all ops: every communicator's is the same UCX
     * worker and mailboxes (progressed for each op, a pass over 16 small
     * calls in flight polled every mailbox 16 times, and MPI_Waitall polls
     * each of its requests, each poll making a pass) */
    dpc_req_t *first = dpc_g.ops;
    while (first && !first->running)
        first = first->next;
    if (!first)
        return false;
    first->c->tp->ops->progress(first->c->tp);
    bool more = false;
    for (dpc_req_t *op = first; op; op = op->next) {
        op_test_with(op, false);
        more |= op->running && (op_held_here(op) ? dpc_sched_has_unheld_work(op->s)
                                                 : dpc_sched_has_local_work(op->s));
    }
    return more;
}

/* Let the MPI library progress what the program left running in it. A
 * rank waiting in a collective of ours makes no call into the MPI library,
 * so its own nonblocking MPI operations stand still meanwhile: an
 * MPI_Isend whose receiver is blocked in MPI_Recv, or an MPI_Iallreduce
 * that went to the library, whose peers then never reach the collective
 * this rank waits in (a deadlock MPICH's own collectives do not have:
 * their waits progress everything). A test of a receive that never
 * matches (dpc_g.probe_req) runs the library's whole progress engine once.
 * (Not a probe: MPICH's MPI_Iprobe moves the network but not the steps of
 * its nonblocking collectives, and on MPI_COMM_SELF not even that.) Only
 * in this thread, the program's, which is in an MPI call; one thread at a
 * time, as MPI allows one completion call per request; only once the wait
 * has stopped spinning, where a test costs little against a yield or a
 * nap. */
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static void poke_mpi_progress(void)
{
    if (pthread_mutex_trylock(&probe_lock) != 0)
        return;
    int flag = 0;
    if (dpc_g.probe_req != MPI_REQUEST_NULL)
        PMPI_Test(&dpc_g.probe_req, &flag, MPI_STATUS_IGNORE);
    pthread_mutex_unlock(&probe_lock);
}

/* Drive op to its end in this thread, progressing every other op in flight
 * too (ours may wait on a peer that waits on one of those). The progress
 * thread stands aside meanwhile (drivers > 0): two threads polling one
 * worker would only take turns at the lock and steal a core. */
static void op_wait(dpc_req_t *op, bool hand_over)
{
    bool lk = op->mode != DPC_BLOCKING || dpc_need_lock();
    dpc_transport_t *tp = op->c->tp;
    dpc_lock(lk);
    __atomic_add_fetch(&dpc_g.drivers, 1, __ATOMIC_RELEASE);
    /* the clock is read only once the wait has lasted 64 turns: a small
     * collective is over before that, and the read costs more than a turn */
    uint64_t spin_until = 0;
    unsigned yields = 0;
    for (unsigned n = 0;; n++) {
        if (n == 64)
            spin_until = tp->ops->now_ns(tp) + (dpc_g.oversubscribed ? 0 : SPIN_NS_DEDICATED);
        bool spinning = n < 4 || (!dpc_g.oversubscribed && n < 64) ||
                        ((n & 63) != 0 || tp->ops->now_ns(tp) < spin_until);
        if (!spinning && yields < YIELDS + 1)
            yields++;
        if (dpc_g.ops)
            dpc_ops_progress_locked();
        if (op->mode == DPC_BLOCKING)
            op_test_locked(op);
        if (op->done)
            break;
        /* sleep on the worker's fd; not with other user threads around,
         * who would then wait for the lock instead of for the network */
        if (yields > YIELDS && !dpc_g.mt && !(op->s && dpc_sched_has_local_work(op->s)))
            tp->ops->idle_wait(tp, 1000000);
        dpc_unlock(lk);
        if (yields)
            poke_mpi_progress();
        if (yields && (yields <= YIELDS || dpc_g.mt))
            sched_yield();
        if (yields)
            spin_until = 0;   /* once out of the spin phase, stay out */
        dpc_lock(lk);
    }
    /* (what is still running goes on in the progress thread, unless the
     * program can be left to finish all of it: dpc_nbc_leavable_locked) */
    if (__atomic_sub_fetch(&dpc_g.drivers, 1, __ATOMIC_RELEASE) == 0 && hand_over)
        dpc_nbc_hand_on_locked();
    dpc_unlock(lk);
}

void dpc_op_wait(dpc_req_t *op)
{
    op_wait(op, true);
}

/* (a batch of 16 persistent bcasts at 2 ranks woke the thread at about 1
 * in 4 starts on its root, which runs ahead until its rings to the other
 * rank are full: each wait but the last ended with sends of the next ops
 * still queued, and the thread it woke then contended for the lock with
 * the very wait that drove them) */
void dpc_op_wait_in_series(dpc_req_t *op)
{
    op_wait(op, false);
}

/* Small blocking and nonblocking calls whose schedule can be replayed
 * when they repeat: building one costs about as much as a small
 * collective's own messages (a persistent call keeps its own). The
 * v-variants too, on communicators small enough that comparing their
 * counts and displacements stays cheap. A nonblocking call replays only a
 * nonblocking call's schedule (built with its local work deferred and
 * sliced: dpc_sched_params_t), a blocking one only a blocking one's.
 * (DPC_REPLAY_MAX_BYTES, DPC_REPLAY_MAX_V_RANKS: shim.h) */

static bool has_vectors(const dpc_coll_args_t *a)
{
    return a->counts || a->displs || a->scounts || a->sdispls;
}

static bool replayable(const dpc_req_t *op)
{
    const dpc_coll_args_t *a = &op->job->a;
    return op->mode != DPC_PERSISTENT && op->job->bytes <= DPC_REPLAY_MAX_BYTES &&
           (!has_vectors(a) || a->size <= DPC_REPLAY_MAX_V_RANKS);
}

/* The same counts (or displacements): both absent, or p equal entries. */
static bool same_vec(const size_t *x, const size_t *y, int p)
{
    return !x || !y ? x == y : !memcmp(x, y, sizeof(size_t) * (size_t)p);
}

/* The same arguments, field by field, but for where the buffers are: the
 * build would make the same steps, at other addresses (dpc_sched_rebase).
 * (the four vectors looked at only where there are some: most calls have
 * none, and the four calls cost a fifth of a small call's replay) */
static bool same_shape(const dpc_coll_args_t *x, const dpc_coll_args_t *y)
{
    return x->coll == y->coll && x->rank == y->rank && x->size == y->size &&
           !x->sbuf == !y->sbuf && !x->rbuf == !y->rbuf && x->in_place == y->in_place &&
           x->count == y->count && x->dtype == y->dtype && x->op == y->op &&
           x->root == y->root && x->seg_bytes == y->seg_bytes && x->one_sided == y->one_sided &&
           x->push_min == y->push_min && x->push_max == y->push_max &&
           x->eager_max == y->eager_max && x->node == y->node && x->nnodes == y->nnodes &&
           x->node_ranks == y->node_ranks &&
           ((!has_vectors(x) && !has_vectors(y)) ||
            (same_vec(x->counts, y->counts, x->size) && same_vec(x->displs, y->displs, x->size) &&
             same_vec(x->scounts, y->scounts, x->size) &&
             same_vec(x->sdispls, y->sdispls, x->size)));
}

/* A replay slot's call in brief: calls with different keys cannot share
 * a schedule (same_shape decides for those with the same); never 0. */
static uint64_t replay_key(const dpc_coll_args_t *a, bool nb)
{
    uint64_t k = (uint64_t)a->coll * UINT64_C(0x9E3779B97F4A7C15);
    k ^= (uint64_t)a->count * UINT64_C(0xC2B2AE3D27D4EB4F);
    k ^= ((uint64_t)a->dtype << 40) ^ ((uint64_t)a->op << 48) ^ ((uint64_t)(unsigned)a->root << 16);
    k ^= (uint64_t)a->in_place << 1 | (uint64_t)nb << 2;
    return k | UINT64_C(1) << 63;
}

/* The end of the farthest block, in elements. */
static size_t blocks_end(const size_t *counts, const size_t *displs, int p)
{
    size_t end = 0;
    for (int i = 0; i < p; i++)
        if (counts[i] && displs[i] + counts[i] > end)
            end = displs[i] + counts[i];
    return end;
}

/* The bytes a replayable call's build may address from sbuf and from rbuf
 * (equal blocks: count per rank, or the whole vector; the v-variants: as
 * far as their blocks reach). An in-place reduce-scatter reads its input
 * from rbuf (sbuf is then rbuf too). */
static void buffer_bytes(const dpc_coll_args_t *a, size_t *in, size_t *out)
{
    size_t es = dpc_dtype_size(a->dtype), one = a->count * es, all = one * (size_t)a->size;
    size_t sum = 0;
    switch (a->coll) {
    case DPC_REDUCE_SCATTER_BLOCK: *in = all; *out = a->in_place ? all : one; break;
    case DPC_REDUCE_SCATTER:
        for (int i = 0; i < a->size; i++)
            sum += a->counts[i];
        *in = sum * es;
        *out = a->in_place ? sum * es : a->counts[a->rank] * es;
        break;
    case DPC_ALLGATHER: *in = one; *out = all; break;
    case DPC_ALLGATHERV:
        *in = a->counts[a->rank] * es;
        *out = blocks_end(a->counts, a->displs, a->size) * es;
        break;
    case DPC_ALLTOALL: *in = *out = all; break;
    case DPC_ALLTOALLV:
        *in = a->scounts ? blocks_end(a->scounts, a->sdispls, a->size) * es : 0;
        *out = blocks_end(a->counts, a->displs, a->size) * es;
        break;
    case DPC_BCAST: *in = 0; *out = one; break;
    default: *in = *out = one; break;   /* allreduce */
    }
}

/* How a schedule built for `was` moves onto now's buffers (mv, *n of
 * them): false when it cannot (the old ranges overlap but would move
 * apart: an address in both would have two places to go). */
static bool moves_onto(const dpc_coll_args_t *was, const dpc_coll_args_t *now,
                       dpc_sched_move_t mv[2], int *n)
{
    *n = 0;
    if (was->sbuf == now->sbuf && was->rbuf == now->rbuf)
        return true;   /* the common loop on the same buffers: nothing to size */
    size_t in, out;
    buffer_bytes(was, &in, &out);
    if (was->rbuf && out && was->rbuf != now->rbuf)
        mv[(*n)++] = (dpc_sched_move_t){was->rbuf, now->rbuf, out};
    if (was->sbuf && in && was->sbuf != now->sbuf)
        mv[(*n)++] = (dpc_sched_move_t){was->sbuf, now->sbuf, in};
    uintptr_t r = (uintptr_t)was->rbuf, sb = (uintptr_t)was->sbuf;
    bool overlap = was->rbuf && was->sbuf && r < sb + in && sb < r + out;
    return !overlap || (uintptr_t)now->rbuf - r == (uintptr_t)now->sbuf - sb;
}

/* The tags of a communicator's collective number seq. */
static uint64_t tag_base(const dpc_comm_t *c, unsigned seq)
{
    return ((uint64_t)(c->ctx > 0 ? c->ctx : 0) << DPC_UCX_CTX_SHIFT) |
           ((uint64_t)(seq & ((1u << DPC_UCX_SEQ_BITS) - 1)) << DPC_UCX_SEQ_SHIFT);
}

/* op's state once its schedule has started (or failed to: st), under the
 * lock when locking. */
static void mark_started(dpc_req_t *op, dpc_status_t st)
{
    op->done = st != DPC_OK;
    op->running = !op->done;
    op->st = st;
    op->completed = false;
    if (!op->held) {
        op->c->refs++;        /* the state outlives a communicator freed meanwhile */
        op->held = true;
    }
}

/* The same call, buffers included: its schedule runs again as it is. */
static bool same_call(const dpc_coll_args_t *was, const dpc_coll_args_t *a)
{
    return was->sbuf == a->sbuf && was->rbuf == a->rbuf && same_shape(was, a);
}

/* Slot i holds the schedule of a blocking call the same as a in every
 * argument, its buffers too, kept with the algorithm forced now. */
static bool same_repeat(const dpc_comm_t *c, int i, const dpc_coll_args_t *a,
                        const dpc_algo_t *forced)
{
    return c->replay[i].s && !c->replay[i].nb && c->replay[i].forced == forced &&
           same_call(&c->replay[i].a, a);
}

/* The slot of the schedule a blocking call a repeats exactly (same_repeat),
 * or -1: the last one replayed first (a loop of one call), then any with
 * its key (calls that take turns: a training step's allreduce and bcast, a
 * benchmark's synchronizing allreduce and its call). Under the lock when
 * locking. */
static int repeat_slot(dpc_comm_t *c, const dpc_coll_args_t *a)
{
    const dpc_algo_t *forced = forced_for(a->coll);
    if (same_repeat(c, c->replay_last, a, forced))
        return c->replay_last;
    uint64_t key = replay_key(a, false);
    for (int i = 0; i < DPC_REPLAY_SLOTS; i++)
        if (c->replay_key[i] == key && same_repeat(c, i, a, forced))
            return c->replay_last = i;
    return -1;
}

/* A blocking call that repeats a kept one in every argument, its buffers
 * too, and with the algorithm forced then (repeat_slot): its schedule,
 * from the slot it is kept in, runs again with the parameters it ran with
 * but for its tags and this job's context, and dpc_op_complete gives it
 * back to that slot without copying its arguments or working out its key
 * again. The general replay priced these parameters, looked through the
 * slots, checked how the buffers moved and kept the arguments anew: a
 * quarter of an 8-byte bcast's instructions at 2 ranks (callgrind), which
 * MPICH's own took 20% fewer of in all. False (nothing done) when the call
 * is not such a repeat. */
static bool repeat_start(dpc_req_t *op)
{
    dpc_job_t *j = op->job;
    dpc_comm_t *c = op->c;
    const dpc_coll_args_t *a = &j->a;
    /* (a v-variant's counts and displacements are compared with the kept
     * call's, same_shape, as the general replay does: the same limit) */
    if (j->bytes > DPC_REPLAY_MAX_BYTES || (has_vectors(a) && a->size > DPC_REPLAY_MAX_V_RANKS) ||
        j->pipe.on || j->dev_staged || dpc_g.cfg.explain)
        return false;
    /* (the slots under the lock: a nonblocking call on this communicator
     * may end in the progress thread meanwhile and keep its schedule) */
    bool lk = dpc_need_lock();
    dpc_lock(lk);
    int i = repeat_slot(c, a);
    dpc_sched_t *s = i >= 0 ? c->replay[i].s : NULL;
    if (!s || dpc_sched_replay_tags(s, tag_base(c, c->seq), &j->user) != DPC_OK) {
        dpc_unlock(lk);
        return false;
    }
    c->seq++;
    op->s = s;
    op->al = c->replay[i].al;
    op->forced = c->replay[i].forced;
    op->replayed = op->repeat = true;
    op->replay_slot = i;
    op->replay_key = c->replay_key[i];
    c->replay[i].s = NULL;
    c->replay_key[i] = 0;
    if (!dpc_tl_quiet)
        last_algo = op->al;
    mark_started(op, dpc_sched_start(s));
    dpc_unlock(lk);
    return true;
}

/* The arguments a build reads beyond the call's own: the communicator's
 * shape and the settings every rank has alike. */
static void engine_fields(const dpc_comm_t *c, dpc_coll_args_t *a, bool nonblocking)
{
    a->rank = c->rank;
    a->size = c->size;
    a->nonblocking = nonblocking;
    a->seg_bytes = dpc_g.cfg.seg_bytes;
    a->push_min = DPC_PUSH_MIN;
    a->push_max = dpc_g.cfg.push_max;
    /* schedules run on host memory (device buffers are staged) */
    a->one_sided = dpc_g.cfg.one_sided && dpc_transport_one_sided(c->tp);
    a->eager_max = c->tp->eager_max;
    a->node = c->node;
    a->nnodes = c->nnodes;
    a->node_ranks = c->node_ranks;
}

/* Large host buffers that calls pass again are made of huge pages, where
 * the data cross by cross-memory attach (one node), which pins each page
 * it moves (dpc_hugepage.h). */
static void note_host_buffers(const dpc_comm_t *c, const dpc_job_t *j, const dpc_coll_args_t *a)
{
    if (!dpc_g.cfg.hugepages || !dpc_transport_one_sided(c->tp) || j->dev_staged || j->pipe.on)
        return;
    size_t in, out;
    buffer_bytes(a, &in, &out);
    if (!a->in_place)
        dpc_hugepage_note(a->sbuf, in);
    dpc_hugepage_note(a->rbuf, out);
}

int dpc_op_start(dpc_req_t *op)
{
    dpc_job_t *j = op->job;
    dpc_comm_t *c = op->c;
    dpc_coll_args_t *a = &j->a;
    int err;
    uint64_t entered = op->mode != DPC_BLOCKING ? dpc_nbc_entering() : 0;
    if (op->ipc) {
        dpc_ipc_nb_rewind(op);
        dpc_ipc_nb_prepare(op);
    }
    /* device data are read anew at each start (a persistent call's too):
     * after what the program queued before it (a fresh staged call was
     * ordered and copied by dpc_stage_pair) */
    if (j->dev_staged && !j->dev_fresh &&
        (err = dpc_cuda_order_after_user(op->comm, j->call, DPC_ORDER_STAGING)))
        return err;
    if ((j->pipe.dev_in || j->pipe.dev_out) &&
        (err = dpc_cuda_order_after_user(op->comm, j->call, DPC_ORDER_QUEUES)))
        return err;
    /* (with a device to device attempt first whose card says yes: only if
     * that falls back; prepare below then packs nothing, as such a card
     * needs contiguous types) */
    bool trying = dpc_ipc_nb_trying(op);
    if (j->dev_staged && !dpc_ipc_nb_defers_copy(op) && (err = dpc_job_stage_in(j, op->comm)))
        return err;
    if (j->prepare && (err = j->prepare(j, op->comm)))
        return err;
    engine_fields(c, a, op->mode != DPC_BLOCKING);
    note_host_buffers(c, j, a);
    if (op->mode == DPC_BLOCKING && repeat_start(op))
        return MPI_SUCCESS;
    /* a repeated call with its schedule kept: the algorithm it ran with
     * then (the same choice, as nothing the model reads has changed unless
     * the forced one did), without pricing the alternatives (a v-variant's
     * choice is not in the choice cache) */
    bool replay = replayable(op), movable = !j->pipe.on && !j->dev_staged;
    /* a small persistent call keeps its schedule from one start to the
     * next, with scratch of its own, and runs it again while its arguments
     * (buffers included: a packed type's may move) and the forced
     * algorithm are what they were */
    bool keep = op->mode == DPC_PERSISTENT && j->bytes <= DPC_REPLAY_MAX_BYTES && movable &&
                !op->ipc && !trying;
    const dpc_algo_t *was_forced = op->forced;
    bool choose_late = (replay || keep) && movable && !dpc_g.cfg.explain;
    const dpc_algo_t *al = NULL, *forced = op->forced = forced_for(a->coll);
    /* DPCOLL_AUTOTUNE: by what every rank passes alike, never by what one
     * rank alone knows (autotune.c); a large blocking call replays nothing
     * (replay and keep are false), so choose_late is too */
    if (dpc_g.cfg.autotune && op->mode == DPC_BLOCKING && j->bytes > DPC_REPLAY_MAX_BYTES &&
        !forced && !has_vectors(a) && !j->pipe.on && !dpc_tl_quiet &&
        (err = dpc_autotune_pick(op, &al)))
        return err;
    if (!choose_late && !al && !(al = dpc_choose(c, a, j->call)))
        return dpc_raise(op->comm, MPI_ERR_INTERN, "%s: no algorithm for %s", j->call,
                         dpc_coll_name(a->coll));
    bool lk = op->mode != DPC_BLOCKING || dpc_need_lock();
    dpc_lock(lk);
    unsigned seq = c->seq++;
    /* (an attempt's handshake: a sequence number of its own, the next one
     * on every rank alike) */
    unsigned seq_ipc = trying ? c->seq++ : 0;
    dpc_sched_params_t prm = {
        .tp = c->tp,
        .tag_base = tag_base(c, seq),
        .timeout_ns = (uint64_t)(dpc_g.cfg.timeout_s * 1e9),
        .mem = DPC_MEM_HOST,
        .pool = free_pool(c),
        .dev_ops = j->pipe.dev_in || j->pipe.dev_out ? &dpc_cuda_device_ops : NULL,
        .user_reduce = dpc_op_is_user(a->op) ? dpc_user_op_apply : NULL,
        .user_ctx = &j->user,
        .defer_local = op->mode != DPC_BLOCKING,
        .poll_recvs = op->mode == DPC_BLOCKING,
        /* nonblocking: copies and reductions in slices, so the lock the
         * progress thread holds while it works is free again within tens
         * of microseconds for the program's own calls */
        .local_slice_bytes = op->mode == DPC_BLOCKING ? 0
                             : j->bytes / 64 < DPC_NB_SLICE_MIN ? DPC_NB_SLICE_MIN
                             : j->bytes / 64 > DPC_NB_SLICE_MAX ? DPC_NB_SLICE_MAX
                                                                : j->bytes / 64,
        /* ... and reads and writes of a peer's memory (on one node kernel
         * copies) in slices of 1 MiB: each slice's end is a turn through
         * the transport's progress, and 256 KiB ones made a 16 MiB
         * MPI_Ialltoall behind a sleep 5-8% slower than whole ones (2
         * ranks); a whole one held the lock, or a program's MPI_Test, for
         * as long as the copy (docs/bench/s48) */
        .remote_slice_bytes = op->mode == DPC_BLOCKING ? 0 : DPC_NB_REMOTE_SLICE,
    };
    dpc_status_t st = DPC_OK;
    op->replayed = op->repeat = false;
    if (keep) {
        prm.pool = NULL;
        if (op->s && op->al && (choose_late ? was_forced == forced : al == op->al) &&
            same_shape(&op->built, a) && op->built.sbuf == a->sbuf &&
            op->built.rbuf == a->rbuf && dpc_sched_replay(op->s, &prm) == DPC_OK) {
            op->replayed = true;
            al = op->al;
        }
    }
    if (replay) {
        prm.pool = NULL;   /* its scratch must stay its own */
        /* a loop of one call finds it where it was last time */
        /* (other buffers of the same sizes too, as a program that makes
         * fresh arrays has: the schedule is moved onto them) */
        uint64_t key = replay_key(a, op->mode != DPC_BLOCKING);
        for (int k = -1; k < DPC_REPLAY_SLOTS && !op->s; k++) {
            int i = k < 0 ? c->replay_last : k;
            if (c->replay_key[i] != key)
                continue;
            dpc_coll_args_t *was = &c->replay[i].a;
            dpc_sched_move_t mv[2];
            int nmv = 0;
            if (c->replay[i].s && c->replay[i].nb == (op->mode != DPC_BLOCKING) &&
                (choose_late ? c->replay[i].forced == forced : c->replay[i].al == al) &&
                same_shape(was, a) &&
                moves_onto(was, a, mv, &nmv) && (movable || nmv == 0) &&
                dpc_sched_replay(c->replay[i].s, &prm) == DPC_OK &&
                (nmv == 0 || dpc_sched_rebase(c->replay[i].s, mv, nmv) == DPC_OK)) {
                op->s = c->replay[i].s;
                c->replay[i].s = NULL;
                c->replay_key[i] = 0;
                c->replay_last = op->replay_slot = i;
                op->replayed = true;
                al = c->replay[i].al;
            }
        }
    }
    if (!al && !(al = dpc_choose(c, a, j->call))) {
        dpc_unlock(lk);   /* (every rank alike: the same arguments) */
        return dpc_raise(op->comm, MPI_ERR_INTERN, "%s: no algorithm for %s", j->call,
                         dpc_coll_name(a->coll));
    }
    op->al = al;
    if (!dpc_tl_quiet)
        last_algo = al;
    if (op->s && !op->replayed && dpc_sched_reinit(op->s, &prm) != DPC_OK) {
        dpc_sched_destroy(op->s);     /* still has transfers in flight */
        op->s = NULL;
    }
    if (!op->s && c->spare) {          /* reuse: no malloc on small calls */
        op->s = c->spare;
        c->spare = NULL;
        if (dpc_sched_reinit(op->s, &prm) != DPC_OK) {
            dpc_sched_destroy(op->s);
            op->s = NULL;
        }
    }
    /* (a schedule is made and built outside the lock; a replayed one is
     * ready, and the call goes on under the lock it holds: a small
     * nonblocking call took three lock round trips to start) */
    bool building = !op->replayed;
    if (building) {
        dpc_unlock(lk);
        if (!op->s)
            st = dpc_sched_create(&prm, &op->s);
        if (st == DPC_OK && j->pipe.on)
            st = dpc_pipeline_run_build(c, j->call, a, &j->pipe, op->s, &op->al);
        else if (st == DPC_OK)
            st = al->build(a, op->s);
        if (keep)
            op->built = *a;
        dpc_lock(lk);
    }
    if (st == DPC_OK && trying)
        st = dpc_ipc_nb_start(op, tag_base(c, seq_ipc));
    else if (st == DPC_OK)
        st = dpc_sched_start(op->s);
    mark_started(op, st);
    if (op->running && op->mode != DPC_BLOCKING) {
        dpc_g.nb_started++;
        op->active_bytes = j->bytes;
        __atomic_add_fetch(&dpc_g.nb_active_bytes, op->active_bytes, __ATOMIC_RELAXED);
        __atomic_add_fetch(&dpc_g.nb_active, 1, __ATOMIC_RELEASE);
    }
    if (op->mode != DPC_BLOCKING)
        dpc_nbc_started_locked(op, entered);
    dpc_unlock(lk);
    return MPI_SUCCESS;   /* a failed start is reported by dpc_op_complete */
}

/* A kept call's counts and displacements, copied into memory of the slot
 * (*vec, reused): the call's own arrays go with its job. On no memory
 * the call is kept as one with none, which no v-call matches. */
static void keep_vectors(dpc_coll_args_t *a, size_t **vec)
{
    if (!has_vectors(a))
        return;
    const size_t **v[4] = {&a->counts, &a->displs, &a->scounts, &a->sdispls};
    size_t p = (size_t)a->size, n = 0;
    for (int k = 0; k < 4; k++)
        n += *v[k] ? p : 0;
    if (n == 0)
        return;
    size_t *mem = realloc(*vec, sizeof(size_t) * 4 * p);
    if (!mem) {
        a->coll = DPC_COLL_COUNT;   /* (matches nothing) */
        return;
    }
    *vec = mem;
    for (int k = 0; k < 4; k++)
        if (*v[k]) {
            memcpy(mem, *v[k], sizeof(size_t) * p);
            *v[k] = mem;
            mem += p;
        }
}

/* A call of ours in DPCOLL_STATS: coll on bytes, on al (NULL: device to
 * device, went), with the result rc. Under the lock when locking. */
static void count_ours(dpc_coll_t coll, unsigned long long bytes, const dpc_algo_t *al, bool went,
                       int rc)
{
    dpc_coll_stats_t *cs = &dpc_g.stats[coll];
    cs->ours++;
    cs->bytes += bytes;
    int ai = al ? algo_index(al) : -1;
    if (ai >= 0)
        cs->by_algo[ai]++;
    cs->ipc += went;
    cs->errors += rc != MPI_SUCCESS;
}

int dpc_op_complete(dpc_req_t *op)
{
    dpc_job_t *j = op->job;
    dpc_comm_t *c = op->c;
    int rc = MPI_SUCCESS;
    bool went = dpc_ipc_nb_went(op);
    if (op->st != DPC_OK) {
        char why[512] = "";
        if (dpc_ipc_nb_why(op))
            snprintf(why, sizeof(why), "%s", dpc_ipc_nb_why(op));
        else if (op->s)
            dpc_sched_describe(op->s, why, sizeof(why));
        char name[MPI_MAX_OBJECT_NAME] = "";
        int len = 0;
        PMPI_Comm_get_name(op->comm, name, &len);
        char after[64] = "";
        if (op->st == DPC_ERR_TIMEOUT)
            snprintf(after, sizeof(after), " (after %g s: DPCOLL_TIMEOUT)", dpc_g.cfg.timeout_s);
        const char *doing = dpc_ipc_nb_doing(op);
        rc = dpc_raise(op->comm, op->st == DPC_ERR_TIMEOUT ? MPI_ERR_OTHER : error_class(op->st),
                       "%s (%s, %s) on communicator %s (size %d, rank %d): %s%s", j->call,
                       dpc_coll_name(j->a.coll), doing ? doing : op->al ? op->al->name : "?",
                       len ? name : "(unnamed)", c->size, c->rank,
                       why[0] ? why : dpc_status_str(op->st), after);
    } else if (!went) {
        if (j->finish)
            rc = j->finish(j, op->comm);
        if (rc == MPI_SUCCESS && j->dev_staged)
            rc = dpc_job_stage_out(j, op->comm);
    }   /* (device to device: the results are in the program's buffers) */
    bool lk = op->mode != DPC_BLOCKING || dpc_need_lock();
    dpc_lock(lk);
    if (op->ipc)
        dpc_ipc_nb_end(op);
    /* keep the schedule for the next call when it left nothing in flight
     * (a persistent op keeps its own) */
    if (op->repeat && op->st == DPC_OK && dpc_sched_idle(op->s) && !c->replay[op->replay_slot].s) {
        /* back where it came from, with the arguments and key it had
         * there (the same: repeat_start), and no pool (a replay's) */
        int v = op->replay_slot;
        c->replay[v].s = op->s;
        c->replay[v].used = ++c->replay_clock;
        c->replay_key[v] = op->replay_key;
        op->s = NULL;
    }
    if (op->s && dpc_sched_idle(op->s))
        dpc_sched_release_pool(op->s);
    if (op->s && op->mode != DPC_PERSISTENT && replayable(op) && op->st == DPC_OK &&
        dpc_sched_idle(op->s)) {
        /* it ran to its end: keep it for the same call, in place of the
         * least recently used */
        int v = op->replay_slot;
        if (!op->replayed || c->replay[v].s) {
            v = 0;
            for (int i = 1; i < DPC_REPLAY_SLOTS; i++)
                if (!c->replay[i].s || (c->replay[v].s && c->replay[i].used < c->replay[v].used))
                    v = i;
            dpc_sched_destroy(c->replay[v].s);
        }
        c->replay[v].s = op->s;
        c->replay[v].nb = op->mode != DPC_BLOCKING;
        c->replay[v].al = op->al;
        c->replay[v].forced = op->forced;
        c->replay[v].a = j->a;
        keep_vectors(&c->replay[v].a, &c->replay[v].vec);
        c->replay[v].used = ++c->replay_clock;
        c->replay_key[v] = replay_key(&c->replay[v].a, c->replay[v].nb);
        c->replay_last = v;   /* (where the same call again looks first: repeat_start) */
        op->s = NULL;
    }
    if (op->s && op->mode != DPC_PERSISTENT) {
        if (!c->spare && dpc_sched_idle(op->s))
            c->spare = op->s;
        else
            dpc_sched_destroy(op->s);
        op->s = NULL;
    }
    if (!dpc_tl_quiet || op->mode != DPC_BLOCKING)
        count_ours(j->a.coll, j->bytes, went ? NULL : op->al, went, rc);
    op->completed = true;
    op->err = rc;
    if (op->held && op->mode != DPC_PERSISTENT) {
        op->held = false;
        dpc_comm_unref_locked(c);
    }
    dpc_unlock(lk);
    return rc;
}

/* A blocking call's op, started (on the caller's stack): its end. */
static int wait_and_complete(dpc_req_t *op)
{
    if (op->running)
        dpc_op_wait(op);
    return dpc_op_complete(op);
}

int dpc_run(MPI_Comm comm, dpc_comm_t *c, dpc_job_t *j, dpc_mode_t mode, MPI_Request *req)
{
    if (dpc_cuda)
        dpc_stage_claim(j, mode);
    if (__builtin_expect(__atomic_load_n(&dpc_g.nb_orphans, __ATOMIC_RELAXED) > 0, 0))
        dpc_nbc_reap(false);
    if (mode != DPC_BLOCKING) {
        dpc_ipc_nb_t *ipc = dpc_ipc_take(comm);
        dpc_req_t *op = calloc(1, sizeof(*op));
        if (!op) {
            free(ipc);
            const char *call = j->call;
            if (j->release)
                j->release(j);
            free(j);
            return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
        }
        op->job = j;
        /* (a large-count call's int arrays, which the job points into,
         * live as long as it: lcount.h) */
        j->owned = dpc_tl_adopt;
        dpc_tl_adopt = NULL;
        op->c = c;
        op->comm = comm;
        op->mode = mode;
        op->req = MPI_REQUEST_NULL;   /* no handle yet: persist.c's find() skips it */
        op->ipc = ipc;
        return dpc_nbc_post(op, req);
    }
    dpc_req_t op = {.job = j, .c = c, .comm = comm, .mode = DPC_BLOCKING};
    double t0 = dpc_g.cfg.autotune ? PMPI_Wtime() : 0;
    int rc = dpc_op_start(&op);
    if (rc == MPI_SUCCESS)
        rc = wait_and_complete(&op);
    if (op.tune_slot && rc == MPI_SUCCESS)
        dpc_autotune_done(&op, PMPI_Wtime() - t0);
    if (j->release)
        j->release(j);
    return rc;
}

/* Passes over a rerun's steps without one done before the engine takes
 * them on (dpc_sched_rerun): about as long as op_wait spins before it
 * reads the clock, or, with more ranks than cores, as long as it spins
 * before it yields. */
#define RERUN_IDLE_PASSES 256
#define RERUN_IDLE_PASSES_SHARED 4

/* dpc_run_repeat's way where nothing else needs the engine (no other
 * thread, no nonblocking call running, so no lock): the kept schedule in
 * slot i runs in this call by dpc_sched_rerun, without a job or an op,
 * unless it has to wait, when an op takes it on as repeat_start's would.
 * False: not a schedule it can run so, nothing done. */
static bool rerun(MPI_Comm comm, dpc_comm_t *c, const char *call, const dpc_coll_args_t *a,
                  unsigned long long bytes, int i, int *rc)
{
    dpc_sched_t *s = c->replay[i].s;
    bool ran;
    dpc_status_t st = dpc_sched_rerun(s, tag_base(c, c->seq), NULL,
                                      dpc_g.oversubscribed ? RERUN_IDLE_PASSES_SHARED
                                                           : RERUN_IDLE_PASSES, &ran);
    if (!ran)
        return false;
    c->seq++;
    const dpc_algo_t *al = c->replay[i].al;
    if (!dpc_tl_quiet)
        last_algo = al;
    if (st == DPC_OK) {
        c->replay[i].used = ++c->replay_clock;
        if (!dpc_tl_quiet)
            count_ours(a->coll, bytes, al, false, MPI_SUCCESS);
        *rc = MPI_SUCCESS;
        return true;
    }
    /* it waits (or failed): an op takes it from its slot, and gives it
     * back there at its end */
    dpc_job_t j = {.a = *a, .call = call, .bytes = bytes};
    dpc_req_t op = {.job = &j, .c = c, .comm = comm, .mode = DPC_BLOCKING, .s = s, .al = al,
                    .forced = c->replay[i].forced, .replayed = true, .repeat = true,
                    .replay_slot = i, .replay_key = c->replay_key[i]};
    c->replay[i].s = NULL;
    c->replay_key[i] = 0;
    mark_started(&op, st == DPC_INPROGRESS ? DPC_OK : st);
    *rc = wait_and_complete(&op);
    return true;
}

int dpc_run_repeat(MPI_Comm comm, dpc_comm_t *c, const char *call, dpc_coll_args_t *a,
                   unsigned long long bytes)
{
    /* (a call on the host copies of device buffers hands them to its job
     * in dpc_run: stage.h) */
    if ((dpc_cuda && dpc_stage_inner()) || dpc_g.cfg.explain || dpc_op_is_user(a->op))
        return DPC_RUN_MISS;   /* (a program's op needs a job's context: dpc_run) */
    if (__builtin_expect(__atomic_load_n(&dpc_g.nb_orphans, __ATOMIC_RELAXED) > 0, 0))
        dpc_nbc_reap(false);
    engine_fields(c, a, false);
    int rc, i = -1;
    bool lk = dpc_need_lock();
    if (!lk && (i = repeat_slot(c, a)) < 0)
        return DPC_RUN_MISS;
    if (lk || !rerun(comm, c, call, a, bytes, i, &rc)) {
        /* (under the lock, or a schedule dpc_sched_rerun does not run) */
        dpc_job_t j = {.a = *a, .call = call, .bytes = bytes};
        dpc_req_t op = {.job = &j, .c = c, .comm = comm, .mode = DPC_BLOCKING};
        if (!repeat_start(&op))
            return DPC_RUN_MISS;
        rc = wait_and_complete(&op);
    }
    if (!dpc_tl_quiet)
        __atomic_add_fetch(&dpc_g.stats[a->coll].short_way, 1, __ATOMIC_RELAXED);
    return rc;
}

void dpc_stats_print(void)
{
    static const char *const why[DPC_WHY_COUNT] = {
        "libdpcoll disabled", "intercommunicator", "user-defined op not run here", "datatype",
        "count beyond int", "persistent, mpi_f08 past libdpcoll"};
    char line[2048];
    for (int c = 0; c < DPC_COLL_COUNT; c++) {
        dpc_coll_stats_t *cs = &dpc_g.stats[c];
        if (!cs->ours && !cs->pmpi)
            continue;
        size_t off = (size_t)snprintf(line, sizeof(line), "rank %d %s: %llu on libdpcoll", dpc_g.world_rank,
                                      dpc_coll_name(c), cs->ours);
        const char *sep = " (";
        for (int i = 0; i < dpc_g.nalgos && off < sizeof(line); i++)
            if (cs->by_algo[i]) {
                off += (size_t)snprintf(line + off, sizeof(line) - off, "%s%s %llu", sep,
                                        dpc_algos()[i]->name, cs->by_algo[i]);
                sep = ", ";
            }
        if (cs->short_way && off < sizeof(line)) {
            off += (size_t)snprintf(line + off, sizeof(line) - off, "%s%llu repeats by the short way",
                                    sep, cs->short_way);
            sep = ", ";
        }
        if (cs->ipc && off < sizeof(line)) {
            off += (size_t)snprintf(line + off, sizeof(line) - off, "%scuda_ipc %llu", sep, cs->ipc);
            sep = ", ";
        }
        if (*sep == ',' && off < sizeof(line))
            off += (size_t)snprintf(line + off, sizeof(line) - off, ")");
        if (off < sizeof(line))
            off += (size_t)snprintf(line + off, sizeof(line) - off, ", %llu bytes; %llu to PMPI",
                                    cs->bytes, cs->pmpi);
        sep = " (";
        for (int w = 0; w < DPC_WHY_COUNT && off < sizeof(line); w++)
            if (cs->why[w]) {
                off += (size_t)snprintf(line + off, sizeof(line) - off, "%s%s %llu", sep, why[w], cs->why[w]);
                sep = ", ";
            }
        if (*sep == ',' && off < sizeof(line))
            off += (size_t)snprintf(line + off, sizeof(line) - off, ")");
        if (cs->errors && off < sizeof(line))
            snprintf(line + off, sizeof(line) - off, "; %llu errors", cs->errors);
        fprintf(stderr, "libdpcoll stats: %s\n", line);
    }
    if (dpc_g.cfg.autotune)
        fprintf(stderr, "libdpcoll stats: rank %d autotune: %llu call signatures measured and "
                        "decided, %llu of them keeping another algorithm than the model's, "
                        "%llu of them measured again (after DPCOLL_AUTOTUNE_PERIOD)\n",
                dpc_g.world_rank, dpc_g.tuned, dpc_g.tuned_other, dpc_g.retuned);
    if (dpc_g.nb_started)
        fprintf(stderr, "libdpcoll stats: rank %d nonblocking and persistent: %llu started, "
                        "the progress thread woken for them %llu times (and left asleep "
                        "%llu times: waited for at once)\n", dpc_g.world_rank,
                dpc_g.nb_started, dpc_g.prog_wakes, dpc_g.prog_wakes_spared);
}
