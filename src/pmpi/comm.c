/*
 * Communicator cache. State is attached to a communicator with an attribute
 * keyval on its first collective and released by MPI when the communicator
 * is freed. The context id that goes into every tag is agreed by all
 * members: an allreduce (AND) of the ids each member has free picks the
 * lowest id free everywhere; never a local pointer or handle.
 *
 * With MPI_THREAD_MULTIPLE two threads may set up two communicators at
 * once. Both offers would then list the same free ids, and both
 * communicators would get the same id: their messages would match each
 * other's (wrong sums, seen in test_mpi_misc's threads test). So one
 * agreement at a time per process offers the free ids; a thread that
 * comes while another's is in flight offers none, which makes the AND
 * empty on every member alike, and all of them try again after a random
 * pause (which breaks the tie when two ranks gave the offer to different
 * communicators). An extra word says whether every member offered: an
 * empty AND of full offers means the ids are used up.
 */
#include "config.h"
#include "shim.h"
#include "dpc_log.h"
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NCTX (1 << DPC_UCX_CTX_BITS)
#define NWORDS (NCTX / 64)

/* dpc_g.ctx_used, and whether an agreement holds the offer (see the top);
 * never held while communicating or while taking dpc_g.lock */
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static bool ctx_offered;
static void orphans_reap(void);   /* (timed-out agreements: below) */

static void comm_state_free(dpc_comm_t *c)
{
    if (!c)
        return;
    if (c->ctx > 0) {
        pthread_mutex_lock(&ctx_lock);
        dpc_g.ctx_used[c->ctx / 64] &= ~(UINT64_C(1) << (c->ctx % 64));
        pthread_mutex_unlock(&ctx_lock);
    }
    dpc_sched_destroy(c->spare);
    for (int i = 0; i < DPC_REPLAY_SLOTS; i++) {
        dpc_sched_destroy(c->replay[i].s);
        free(c->replay[i].vec);
    }
    dpc_ucx_group_destroy(c->tp);
    dpc_scratch_pool_fini(&c->pool);
    free(c);
}

void dpc_comm_unref_locked(dpc_comm_t *c)
{
    if (--c->refs == 0)
        comm_state_free(c);
}

/* MPI frees the communicator; a collective still running on it keeps our
 * state alive until it ends. */
static int delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm; (void)keyval; (void)extra;
    /* the handle may come back for another communicator: forget it */
    __atomic_add_fetch(&dpc_g.comm_gen, 1, __ATOMIC_RELEASE);
    dpc_lock(true);
    dpc_comm_unref_locked(attr);
    dpc_unlock(true);
    return MPI_SUCCESS;
}

int dpc_comm_keyval_create(void)
{
    int kv = MPI_KEYVAL_INVALID;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &kv, NULL) != MPI_SUCCESS)
        return MPI_KEYVAL_INVALID;
    return kv;
}

/* COMM_WORLD and COMM_SELF are never freed by the program: drop their state
 * before the UCX worker goes away. */
void dpc_comm_release_builtin(void)
{
    orphans_reap();
    PMPI_Comm_delete_attr(MPI_COMM_WORLD, dpc_g.keyval);
    PMPI_Comm_delete_attr(MPI_COMM_SELF, dpc_g.keyval);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Longest pause between two tries of a context agreement (microseconds). */
#define CTX_RETRY_MAX_US 1000

/* Agreements that timed out: MPI cannot cancel or free a nonblocking
 * collective's request, and a member that comes late completes it inside
 * a later MPI call of ours, which then writes its result. So its buffers
 * stay the request's until it is seen complete (tested at the next
 * agreement and at MPI_Finalize); beyond ORPHANS at once they are never
 * freed. Under orphan_lock, which MPI calls are made under (PMPI_Test):
 * unlike ctx_lock, which an attribute callback inside the MPI library
 * takes (delete_fn), no code that the MPI library calls takes it. */
#define ORPHANS 16
static struct { MPI_Request req; uint64_t *buf; } orphan[ORPHANS];
static pthread_mutex_t orphan_lock = PTHREAD_MUTEX_INITIALIZER;

static void orphans_reap(void)
{
    pthread_mutex_lock(&orphan_lock);
    for (int i = 0; i < ORPHANS; i++) {
        int done = 0;
        if (orphan[i].buf && PMPI_Test(&orphan[i].req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
            done) {
            free(orphan[i].buf);
            orphan[i].buf = NULL;
        }
    }
    pthread_mutex_unlock(&orphan_lock);
}

static void orphan_keep(MPI_Request req, uint64_t *buf)
{
    pthread_mutex_lock(&orphan_lock);
    for (int i = 0; i < ORPHANS; i++)
        if (!orphan[i].buf) {
            orphan[i].req = req;
            orphan[i].buf = buf;
            break;
        }
    pthread_mutex_unlock(&orphan_lock);
}

static int ctx_timeout(MPI_Comm comm, const char *call, double limit, const char *why)
{
    return dpc_raise(comm, MPI_ERR_OTHER, "%s: timed out after %.0f s agreeing on a context id "
                     "for a new communicator (DPCOLL_TIMEOUT): %s", call, limit, why);
}

/* Agree on a context id over comm (see the top); bounded by the timeout
 * like everything. */
static int agree_ctx(MPI_Comm comm, const char *call, int *ctx_p)
{
    double t0 = now_s(), limit = dpc_g.cfg.timeout_s;
    unsigned seed = (unsigned)(t0 * 1e9) ^ (unsigned)(uintptr_t)&t0;
    /* (on the heap: a timed-out agreement's request keeps them) */
    uint64_t *mine = malloc(sizeof(uint64_t) * 2 * (NWORDS + 1)), *all = mine + NWORDS + 1;
    if (!mine)
        return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
    orphans_reap();
    for (unsigned round = 0;; round++) {
        pthread_mutex_lock(&ctx_lock);
        bool offer = !ctx_offered;
        ctx_offered |= offer;
        for (int i = 0; i < NWORDS; i++)
            mine[i] = offer ? ~dpc_g.ctx_used[i] : 0;
        pthread_mutex_unlock(&ctx_lock);
        mine[NWORDS] = offer ? ~UINT64_C(0) : 0;
        MPI_Request req = MPI_REQUEST_NULL;
        int rc = PMPI_Iallreduce(mine, all, NWORDS + 1, MPI_UINT64_T, MPI_BAND, comm, &req);
        int done = 0;
        while (rc == MPI_SUCCESS && !done) {
            PMPI_Test(&req, &done, MPI_STATUS_IGNORE);
            if (done)
                break;
            if (limit > 0 && now_s() - t0 > limit)
                rc = ctx_timeout(comm, call, limit, "not every member called it");
            else
                sched_yield();
        }
        pthread_mutex_lock(&ctx_lock);
        if (offer)
            ctx_offered = false;
        int ctx = -1;
        for (int w = 0; rc == MPI_SUCCESS && w < NWORDS && ctx < 0; w++)
            if (all[w]) {
                ctx = w * 64 + __builtin_ctzll(all[w]);
                dpc_g.ctx_used[w] |= UINT64_C(1) << (ctx % 64);
            }
        bool used_up = rc == MPI_SUCCESS && ctx < 0 && all[NWORDS];
        pthread_mutex_unlock(&ctx_lock);
        if (rc == MPI_SUCCESS && ctx < 0 && !used_up && limit > 0 && now_s() - t0 > limit)
            rc = ctx_timeout(comm, call, limit, "other threads' agreements kept taking the turn");
        else if (rc == MPI_SUCCESS && used_up)
            rc = dpc_raise(comm, MPI_ERR_INTERN, "%s: all %d libdpcoll context ids are in use "
                           "(too many live communicators)", call, NCTX);
        if (rc != MPI_SUCCESS || ctx >= 0) {
            if (rc != MPI_SUCCESS && !done && req != MPI_REQUEST_NULL)
                orphan_keep(req, mine);   /* still in flight: its buffers go with it */
            else
                free(mine);
            if (rc == MPI_SUCCESS)
                *ctx_p = ctx;
            return rc;
        }
        /* another thread's agreement had the offer on some member: a
         * random pause, 8 us doubling each round up to CTX_RETRY_MAX_US */
        unsigned cap = round < 7 ? 8u << round : CTX_RETRY_MAX_US;
        usleep((useconds_t)(rand_r(&seed) % cap));
    }
}

int dpc_comm_get(MPI_Comm comm, const char *call, dpc_comm_t **c_p)
{
    dpc_comm_t *c;
    int found = 0;
    if ((c = dpc_tl_known(comm)) != NULL) {     /* dpc_enter looked already */
        *c_p = c;
        return MPI_SUCCESS;
    }
    PMPI_Comm_get_attr(comm, dpc_g.keyval, &c, &found);
    if (found) {
        *c_p = c;
        return MPI_SUCCESS;
    }
    c = calloc(1, sizeof(*c));
    if (!c)
        return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
    c->refs = 1;      /* the attribute's */
    PMPI_Comm_rank(comm, &c->rank);
    PMPI_Comm_size(comm, &c->size);
    int rc = MPI_SUCCESS;
    if (comm == MPI_COMM_WORLD)
        c->ctx = 0;
    else if (c->size > 1)
        rc = agree_ctx(comm, call, &c->ctx);
    else
        c->ctx = -1;    /* one member: no messages, no context needed */
    if (rc != MPI_SUCCESS) {
        free(c);
        return rc;
    }
    /* translate our ranks to MPI_COMM_WORLD ranks = UCX peers */
    int *mine = malloc(sizeof(int) * (size_t)c->size), *world = malloc(sizeof(int) * (size_t)c->size);
    MPI_Group g, wg;
    if (!mine || !world) {
        free(mine);
        free(world);
        comm_state_free(c);
        return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
    }
    for (int i = 0; i < c->size; i++)
        mine[i] = i;
    PMPI_Comm_group(comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    PMPI_Group_translate_ranks(g, c->size, mine, wg, world);
    PMPI_Group_free(&g);
    PMPI_Group_free(&wg);
    int bad = 0;
    for (int i = 0; i < c->size; i++)
        bad |= world[i] == MPI_UNDEFINED;
    dpc_status_t st = bad ? DPC_ERR_UNSUPPORTED
                          : dpc_ucx_group_create(dpc_g.ux, c->rank, c->size, world, &c->tp);
    free(mine);
    free(world);
    if (st != DPC_OK) {
        comm_state_free(c);
        return dpc_raise(comm, MPI_ERR_INTERN, "%s: cannot set up this communicator (%s)", call,
                         bad ? "members outside MPI_COMM_WORLD (dynamic processes)" : dpc_status_str(st));
    }
    PMPI_Comm_set_attr(comm, dpc_g.keyval, c);
    *c_p = c;
    return MPI_SUCCESS;
}
