/*
 * Context ids: the id that goes into every tag of a communicator's
 * messages, agreed by all members: an allreduce (AND) of the ids each
 * member has free picks the lowest id free everywhere; never a local
 * pointer or handle.
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
 *
 * MPI_Comm_idup's duplicate is agreed on with the duplication itself, as
 * a nonblocking allreduce on the parent posted right after the MPI
 * library's (every member posts it at the same place in the parent's
 * order of collectives). Agreed at the duplicate's first collective
 * instead, a nonblocking first call blocked until every member had made
 * its own, and members that posted their first calls on two duplicates in
 * different orders (MPI allows it) waited for each other until the
 * timeout. Such an agreement stays in flight while the program runs, so
 * it cannot hold the one offer: it offers a window of the lowest WINDOW
 * ids free here and reserves them (no other agreement offers them) until
 * its result is in; the windows together hold half the ids at most. When
 * the windows of the members have no id in common, the duplicate is set
 * up at its first collective like any other.
 */
#include "config.h"
#include "shim.h"
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NCTX (1 << DPC_UCX_CTX_BITS)
#define NWORDS (NCTX / 64)

/* dpc_g.ctx_used, whether an agreement holds the offer (see the top) and
 * the windows of idup agreements in flight; never held while
 * communicating or while taking dpc_g.lock */
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static bool ctx_offered;
static uint64_t ctx_reserved[NWORDS];
static int pend_keyval = MPI_KEYVAL_INVALID;   /* an idup agreement, on its duplicate */
static void pending_reap(void);   /* (idup agreements of freed duplicates: below) */

void dpc_ctx_release(int ctx)
{
    if (ctx <= 0)
        return;
    pthread_mutex_lock(&ctx_lock);
    dpc_g.ctx_used[ctx / 64] &= ~(UINT64_C(1) << (ctx % 64));
    pthread_mutex_unlock(&ctx_lock);
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
 * unlike ctx_lock, which attribute callbacks inside the MPI library take
 * (comm.c's delete_fn through dpc_ctx_release, and pend_delete_fn), no
 * code that the MPI library calls takes it. */
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
    pending_reap();
    for (unsigned round = 0;; round++) {
        pthread_mutex_lock(&ctx_lock);
        bool offer = !ctx_offered;
        ctx_offered |= offer;
        for (int i = 0; i < NWORDS; i++)
            mine[i] = offer ? ~dpc_g.ctx_used[i] & ~ctx_reserved[i] : 0;
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
                           "(too many live communicators, or duplicates from MPI_Comm_idup "
                           "not used yet)", call, NCTX);
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

/* ---- MPI_Comm_idup: the agreement posted with the duplicate ---- */

/* ids a window holds at most, and all windows together: half the ids, so
 * that agreements at other communicators' creation still find free ones
 * (up to 128 duplicates in flight at once get a window) */
#define WINDOW 16
#define WINDOWS_MAX (NCTX / 2)

typedef struct pending {
    MPI_Request req;
    uint64_t *buf;          /* the offer (NWORDS + 1 words), then the AND of all */
    bool taken;             /* its result used (dpc_comm_get): only the memory left */
    struct pending *next;   /* on the list of abandoned ones */
} pending_t;

/* agreements of duplicates freed before their first collective, their
 * requests maybe still in flight (under ctx_lock) */
static pending_t *abandoned;

static void pending_free(pending_t *p)
{
    free(p->buf);
    free(p);
}

/* (under ctx_lock) */
static void window_release(const pending_t *p)
{
    for (int i = 0; i < NWORDS; i++)
        ctx_reserved[i] &= ~p->buf[i];
}

/* An attribute callback, inside the MPI library: no MPI calls, only
 * ctx_lock (see orphan_lock). */
static int pend_delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm; (void)keyval; (void)extra;
    pending_t *p = attr;
    if (p->taken) {
        pending_free(p);
        return MPI_SUCCESS;
    }
    pthread_mutex_lock(&ctx_lock);
    p->next = abandoned;
    abandoned = p;
    pthread_mutex_unlock(&ctx_lock);
    return MPI_SUCCESS;
}

/* The abandoned agreements that have completed give their windows back. */
static void pending_reap(void)
{
    pthread_mutex_lock(&ctx_lock);
    pending_t *list = abandoned, *keep = NULL;
    abandoned = NULL;
    pthread_mutex_unlock(&ctx_lock);
    while (list) {
        pending_t *p = list;
        list = p->next;
        int done = 0;
        if (PMPI_Test(&p->req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) {
            pthread_mutex_lock(&ctx_lock);
            window_release(p);
            pthread_mutex_unlock(&ctx_lock);
            pending_free(p);
        } else {
            p->next = keep;
            keep = p;
        }
    }
    pthread_mutex_lock(&ctx_lock);
    while (keep) {
        pending_t *p = keep;
        keep = p->next;
        p->next = abandoned;
        abandoned = p;
    }
    pthread_mutex_unlock(&ctx_lock);
}

void dpc_ctx_idup_post(MPI_Comm parent, MPI_Comm child)
{
    int inter = 0, size = 0;
    if (!dpc_g.active || child == MPI_COMM_NULL || PMPI_Comm_test_inter(parent, &inter) ||
        inter || PMPI_Comm_size(parent, &size) || size < 2)
        return;
    pending_reap();
    pending_t *p = calloc(1, sizeof(*p));
    uint64_t *buf = calloc(2 * (NWORDS + 1), sizeof(uint64_t));
    if (!p || !buf) {
        free(p);
        free(buf);
        return;     /* (set up at its first collective) */
    }
    p->buf = buf;
    /* the window: none while a blocking agreement holds the offer (its
     * offer lists every free id) */
    int n = 0, reserved = 0;
    pthread_mutex_lock(&ctx_lock);
    for (int w = 0; w < NWORDS; w++)
        reserved += __builtin_popcountll(ctx_reserved[w]);
    for (int w = 0; w < NWORDS && n < WINDOW && !ctx_offered && reserved + WINDOW <= WINDOWS_MAX;
         w++) {
        uint64_t free_ids = ~dpc_g.ctx_used[w] & ~ctx_reserved[w];
        for (; free_ids && n < WINDOW; n++) {
            uint64_t low = free_ids & -free_ids;
            buf[w] |= low;
            free_ids &= ~low;
        }
        ctx_reserved[w] |= buf[w];
    }
    pthread_mutex_unlock(&ctx_lock);
    buf[NWORDS] = n ? ~UINT64_C(0) : 0;
    /* (the parent's error handler sees an error of the MPI library's here,
     * as for the duplication itself) */
    if (PMPI_Iallreduce(buf, buf + NWORDS + 1, NWORDS + 1, MPI_UINT64_T, MPI_BAND, parent,
                        &p->req) != MPI_SUCCESS) {
        pthread_mutex_lock(&ctx_lock);
        window_release(p);
        pthread_mutex_unlock(&ctx_lock);
        pending_free(p);
        return;
    }
    /* on the duplicate before the duplication completes: MPICH makes the
     * communicator at the call and keeps attributes set on it (an
     * attribute copy callback runs there too) */
    if (PMPI_Comm_set_attr(child, pend_keyval, p) != MPI_SUCCESS) {
        pthread_mutex_lock(&ctx_lock);
        p->next = abandoned;
        abandoned = p;
        pthread_mutex_unlock(&ctx_lock);
    }
}

/* The id the agreement posted with comm's MPI_Comm_idup found: 1 with *rc
 * set (and *ctx_p on success), 0 where there is none to take (no such
 * agreement, or no id common to the windows). Waits only for members that
 * have posted it already (they all did, in their MPI_Comm_idup), bounded
 * by the timeout all the same. */
static int pending_take(MPI_Comm comm, const char *call, int *ctx_p, int *rc)
{
    pending_t *p;
    int found = 0, done = 0;
    if (PMPI_Comm_get_attr(comm, pend_keyval, &p, &found) != MPI_SUCCESS || !found)
        return 0;
    double t0 = now_s(), limit = dpc_g.cfg.timeout_s;
    int trc;
    while ((trc = PMPI_Test(&p->req, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS && !done) {
        if (limit > 0 && now_s() - t0 > limit) {
            *rc = ctx_timeout(comm, call, limit, "the agreement posted with MPI_Comm_idup "
                              "did not complete");
            return 1;   /* (still attached: a later call waits again) */
        }
        sched_yield();
    }
    if (trc != MPI_SUCCESS) {
        /* (its buffers may still be the request's: abandoned, not taken) */
        PMPI_Comm_delete_attr(comm, pend_keyval);
        return 0;
    }
    const uint64_t *all = p->buf + NWORDS + 1;
    int ctx = -1;
    pthread_mutex_lock(&ctx_lock);
    for (int w = 0; w < NWORDS && ctx < 0; w++)
        if (all[w]) {
            ctx = w * 64 + __builtin_ctzll(all[w]);
            dpc_g.ctx_used[w] |= UINT64_C(1) << (ctx % 64);
        }
    window_release(p);
    p->taken = true;
    pthread_mutex_unlock(&ctx_lock);
    PMPI_Comm_delete_attr(comm, pend_keyval);   /* (frees it) */
    if (ctx < 0)
        return 0;
    *ctx_p = ctx;
    *rc = MPI_SUCCESS;
    return 1;
}

int dpc_ctx_init(void)
{
    return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, pend_delete_fn, &pend_keyval, NULL);
}

void dpc_ctx_fini(void)
{
    orphans_reap();
    pending_reap();
    if (pend_keyval != MPI_KEYVAL_INVALID)
        PMPI_Comm_free_keyval(&pend_keyval);
}

int dpc_ctx_agree(MPI_Comm comm, const char *call, int *ctx_p)
{
    int rc;
    if (pending_take(comm, call, ctx_p, &rc))
        return rc;
    return agree_ctx(comm, call, ctx_p);
}
