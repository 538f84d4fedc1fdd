/*
 * MPI-4 persistent collectives (MPI_Allreduce_init and the others) on
 * libdpcoll.
 *
 * A persistent request must stay valid across MPI_Start / MPI_Wait cycles,
 * which a generalized request cannot do (completing one frees it). So the
 * handle we give out is a real persistent request of the MPI library, a
 * zero-byte MPI_Recv_init on a communicator of ours, which is never started:
 * to the library it is an inactive request, which every completion call
 * completes at once with an empty status. What makes the handle wait for
 * our collective is that every completion call (MPI_Wait, MPI_Test and
 * their -all, -any and -some forms, MPI_Request_get_status, MPI_Request_free)
 * is ours: it settles our collective first (waits for it, or tests it and
 * answers "not yet"), then lets the library's own call do the rest, mixed
 * with any other request. The -any and -some forms, for which the library
 * skips inactive requests, report ours themselves.
 *
 * (It used to be started with the collective and completed by a zero-byte
 * send to ourselves once the collective had ended: 0.08 us a request, of a
 * 0.3-0.5 us small call. A send to MPI_PROC_NULL, which the library
 * completes at its start, costs 0.02, but MPICH 4.0.2 then hangs a
 * persistent collective of its own whose request reuses a freed one of
 * those (its MPI_Start skips any persistent request whose peer field says
 * MPI_PROC_NULL, and a collective request leaves that field as it was;
 * fixed in MPICH by pmodels/mpich#6357). A counter makes all of this free
 * when there are no persistent requests of ours.)
 */
#include "config.h"
#include "shim.h"
#include "dpc_log.h"
#include "reqmap.h"
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

int dpc_persistent_live;   /* atomic: read bare on every MPI_Wait/Test */
/* The library's own half of each request: a receive on a communicator of
 * ours (made at MPI_Init: threads may make persistent requests at once),
 * never started. */
static MPI_Comm self_comm = MPI_COMM_NULL;

static inline int live(void)
{
    return __atomic_load_n(&dpc_persistent_live, __ATOMIC_RELAXED);
}

int dpc_persist_init(void)
{
    return PMPI_Comm_dup(MPI_COMM_SELF, &self_comm);
}

/* Ours behind a request handle (reqmap.h), under map_lock, which only
 * threads inside MPI calls take (with MPI_THREAD_MULTIPLE: the progress
 * thread never looks here). A handle enters the map (dpc_persist_create)
 * and leaves it (retire) under the lock, so an op never matches a handle
 * the MPI library does not hold for it: an op mapped before its receive
 * exists, or one whose receive has been freed but that is not destroyed
 * yet, would otherwise match the handle the library hands out next, to
 * another thread, and that thread would start, wait for or free someone
 * else's collective. */
static dpc_reqmap_t map;
static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;

static dpc_req_t *find(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL)
        return NULL;
    if (dpc_g.mt)
        pthread_mutex_lock(&map_lock);
    dpc_req_t *hit = dpc_reqmap_get(&map, req);
    if (dpc_g.mt)
        pthread_mutex_unlock(&map_lock);
    return hit;
}

int dpc_persist_create(dpc_req_t *op, MPI_Request *req)
{
    MPI_Request r;
    int rc = PMPI_Recv_init(NULL, 0, MPI_BYTE, 0, 0, self_comm, &r);
    if (rc != MPI_SUCCESS)
        return rc;
    pthread_mutex_lock(&map_lock);
    int full = dpc_reqmap_put(&map, r, op);
    pthread_mutex_unlock(&map_lock);
    if (full) {
        PMPI_Request_free(&r);
        return MPI_ERR_NO_MEM;
    }
    dpc_lock(true);
    op->req = r;
    op->c->refs++;              /* the state lives as long as the request */
    op->held = true;
    op->completed = true;       /* inactive */
    __atomic_add_fetch(&dpc_persistent_live, 1, __ATOMIC_RELAXED);
    dpc_unlock(true);
    *req = op->req;
    return MPI_SUCCESS;
}

/* Before the library frees op's receive (and may give its handle out again):
 * find() must no longer see op. Returns the handle to free. */
static MPI_Request retire(dpc_req_t *op)
{
    dpc_lock(true);
    MPI_Request r = op->req;
    op->req = MPI_REQUEST_NULL;
    dpc_unlock(true);
    pthread_mutex_lock(&map_lock);
    dpc_reqmap_del(&map, r);
    pthread_mutex_unlock(&map_lock);
    return r;
}

/* Start one of ours: our collective (the library's half stays inactive). */
static int start(dpc_req_t *op)
{
    /* (active until a completion call has reported its end, even if the
     * collective itself is over) */
    if (!op->completed || op->unreported)
        return dpc_raise(op->comm, MPI_ERR_REQUEST, "MPI_Start: the persistent %s is still "
                         "active (complete it with MPI_Wait or MPI_Test first)", op->job->call);
    op->err = MPI_SUCCESS;
    int rc = dpc_op_start(op);
    if (rc != MPI_SUCCESS)
        return rc;
    op->unreported = true;
    return MPI_SUCCESS;
}

/* Our collective behind an active request: if it has ended (or, with
 * block, once it has), take its result; from then on the completion calls
 * may report it. Returns whether it has ended. */
static bool settle_in(dpc_req_t *op, bool block, bool series)
{
    if (op->completed)
        return true;
    if (block) {
        dpc_nbc_wait_for(op, series);
    } else {
        dpc_lock(true);
        if (op->running && dpc_g.drivers == 0)
            dpc_ops_progress_locked();
        dpc_unlock(true);
    }
    if (!dpc_op_ended(op))
        return false;
    dpc_nbc_asked(op, 0);
    dpc_op_complete(op);
    return true;
}

static bool settle(dpc_req_t *op, bool block)
{
    return settle_in(op, block, false);
}

/* Settle every one of ours among reqs; returns how many are still running. */
static int settle_all(int n, MPI_Request *reqs, bool block, dpc_req_t **ours)
{
    int pending = 0;
    bool any = false;
    for (int i = 0; i < n; i++) {
        dpc_req_t *op = find(reqs[i]);
        if (ours)
            ours[i] = op;
        any |= op != NULL;
        if (op && !settle_in(op, block, true))
            pending++;
    }
    if (block && any)
        dpc_nbc_hand_over();
    return pending;
}

/* After a completion call completed one of ours (op; NULL: the program's
 * own request): the end of this start is reported now, with our
 * collective's error, if any, in the status. */
static int fix_status(dpc_req_t *op, MPI_Status *st)
{
    if (!op || !op->unreported)
        return MPI_SUCCESS;     /* (inactive: MPI gives an empty status) */
    op->unreported = false;
    if (op->err == MPI_SUCCESS)
        return MPI_SUCCESS;
    if (st != MPI_STATUS_IGNORE)
        st->MPI_ERROR = op->err;
    return op->err;
}

void dpc_persist_destroy_all(void)
{
    for (;;) {
        dpc_req_t *victim = NULL;
        dpc_lock(true);
        for (dpc_req_t *op = dpc_g.ops; op && !victim; op = op->next)
            if (op->mode == DPC_PERSISTENT)
                victim = op;
        dpc_unlock(true);
        if (!victim)
            break;
        settle(victim, true);
        MPI_Request r = retire(victim);
        if (r != MPI_REQUEST_NULL) {
            PMPI_Wait(&r, MPI_STATUS_IGNORE);
            PMPI_Request_free(&r);
        }
        __atomic_sub_fetch(&dpc_persistent_live, 1, __ATOMIC_RELAXED);
        dpc_nbc_destroy(victim);
    }
    if (self_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&self_comm);
    dpc_reqmap_free(&map);
}

DPCOLL_API int MPI_Start(MPI_Request *request)
{
    dpc_req_t *op = live() && request ? find(*request) : NULL;
    return op ? start(op) : PMPI_Start(request);
}

DPCOLL_API int MPI_Startall(int count, MPI_Request requests[])
{
    if (!live())
        return PMPI_Startall(count, requests);
    for (int i = 0; i < count; i++) {
        int rc = MPI_Start(&requests[i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/* MPICH's MPI_Wait, MPI_Waitany and MPI_Waitsome on a generalized request
 * with a poll function call that function in a loop and nothing else: they
 * neither sleep nor run MPICH's own progress (only MPI_Waitall calls the
 * wait function, dpc_op_wait_in_series). A rank waiting so for a
 * nonblocking collective of ours held its core the whole time, and its own
 * MPI operations in flight stood still: a peer waiting in MPI for one of
 * them never joined the collective. So a nonblocking collective of ours
 * is waited for here: alone by dpc_op_wait (which sleeps when idle and lets
 * the MPI library progress), among others by a loop of tests that gives
 * the core away once it has polled a while (poll_turn). */
#define POLL_SPIN_TURNS 64
#define POLL_YIELD_TURNS 16
#define POLL_NAP_US 50        /* ... and after a thousand turns (50 ms and more): */
#define POLL_LONG_NAP_US 250
static void poll_turn(unsigned *turn)
{
    unsigned t = *turn;
    *turn += t < UINT_MAX;
    if (t < (dpc_g.oversubscribed ? 0u : POLL_SPIN_TURNS))
        return;
    if (t < POLL_SPIN_TURNS + POLL_YIELD_TURNS)
        sched_yield();
    else
        usleep(t < 1000 ? POLL_NAP_US : POLL_LONG_NAP_US);
}

DPCOLL_API int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    dpc_req_t *op = live() && request ? find(*request) : NULL;
    if (op)
        settle(op, true);
    else if (request)
        dpc_nbc_drive(*request);
    int rc = PMPI_Wait(request, status);
    return rc == MPI_SUCCESS ? fix_status(op, status) : rc;
}

DPCOLL_API int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    dpc_req_t *op = live() && request ? find(*request) : NULL;
    if (op && !settle(op, false)) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    int rc = PMPI_Test(request, flag, status);
    return rc == MPI_SUCCESS && *flag ? fix_status(op, status) : rc;
}

/* Errors of ours in a multi-request completion: into the statuses, and
 * MPI_ERR_IN_STATUS as the standard has it. */
static int fix_statuses(int n, dpc_req_t **ours, MPI_Status *st, int rc)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad |= fix_status(ours[i], st == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &st[i]) !=
               MPI_SUCCESS;
    return bad && rc == MPI_SUCCESS ? MPI_ERR_IN_STATUS : rc;
}

DPCOLL_API int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    /* (MPICH's MPI_Waitall calls our wait function for one request after
     * another: the later ones would be asked for only once the earlier
     * ones are over) */
    dpc_nbc_asked_in(count, requests);
    if (!live() || count <= 0)
        return PMPI_Waitall(count, requests, statuses);
    dpc_req_t **ours = calloc((size_t)count, sizeof(*ours));
    if (!ours) {    /* (no memory for the bookkeeping: one at a time) */
        int rc = MPI_SUCCESS;
        for (int i = 0; i < count; i++) {
            MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
            int e = MPI_Wait(&requests[i], st);
            if (e != MPI_SUCCESS) {
                rc = MPI_ERR_IN_STATUS;
                if (st != MPI_STATUS_IGNORE)
                    st->MPI_ERROR = e;
            }
        }
        return rc;
    }
    settle_all(count, requests, true, ours);
    int rc = PMPI_Waitall(count, requests, statuses);
    rc = fix_statuses(count, ours, statuses, rc);
    free(ours);
    return rc;
}

DPCOLL_API int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    if (!live() || count <= 0)
        return PMPI_Testall(count, requests, flag, statuses);
    dpc_req_t **ours = calloc((size_t)count, sizeof(*ours));
    if (!ours)
        return MPI_ERR_NO_MEM;
    int rc = MPI_SUCCESS;
    if (settle_all(count, requests, false, ours)) {
        *flag = 0;     /* not all done: complete none, as Testall must */
    } else {
        rc = PMPI_Testall(count, requests, flag, statuses);
        if (*flag)
            rc = fix_statuses(count, ours, statuses, rc);
    }
    free(ours);
    return rc;
}

/* The -any and -some calls. The library skips inactive requests there
 * (MPI_Waitany never gives their index), so these calls report ours
 * themselves: one whose collective has ended and that no call has reported
 * yet, as the request that completed. The library sees the array with all
 * of ours as MPI_REQUEST_NULL, and reports only the program's own. */

/* Room for ours and a masked copy of the handles, in one block. */
static dpc_req_t **scratch_for(int n, MPI_Request **copy)
{
    dpc_req_t **ours = calloc((size_t)n, sizeof(*ours) + sizeof(MPI_Request));
    *copy = ours ? (MPI_Request *)(ours + n) : NULL;
    return ours;
}

/* The requests as the library is to see them: ours as MPI_REQUEST_NULL. */
static MPI_Request *masked(int n, MPI_Request *requests, dpc_req_t **ours, MPI_Request *copy)
{
    for (int i = 0; i < n; i++)
        copy[i] = ours[i] ? MPI_REQUEST_NULL : requests[i];
    return copy;
}

/* After the library's call on the copy: what it did to the handles it saw
 * (a completed nonblocking request becomes MPI_REQUEST_NULL). */
static void unmask(int n, MPI_Request *requests, const MPI_Request *seen, dpc_req_t **ours)
{
    for (int i = 0; i < n; i++)
        if (!ours[i])
            requests[i] = seen[i];
}

/* Reports request i, one of ours that has ended: status and error. */
static int report(MPI_Request *request, dpc_req_t *op, MPI_Status *status)
{
    int rc = PMPI_Wait(request, status);   /* (inactive: an empty status) */
    int err = fix_status(op, status);
    return rc == MPI_SUCCESS ? err : rc;
}

/* One of ours whose collective has ended and that no call has reported. */
static bool ended_unreported(const dpc_req_t *op)
{
    return op && op->completed && op->unreported;
}

/* The first of ours that has ended unreported, or -1. */
static int first_unreported(int n, dpc_req_t **ours)
{
    for (int i = 0; i < n; i++)
        if (ended_unreported(ours[i]))
            return i;
    return -1;
}

/* Reports every one of ours that has ended unreported, into indices and
 * statuses from 0; returns how many, and MPI_ERR_IN_STATUS into *rc if one
 * of them failed. */
static int report_all(int n, MPI_Request *requests, dpc_req_t **ours, int *indices,
                      MPI_Status *statuses, int *rc)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (ended_unreported(ours[i])) {
            MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[k];
            if (report(&requests[i], ours[i], st) != MPI_SUCCESS)
                *rc = MPI_ERR_IN_STATUS;
            indices[k++] = i;
        }
    return k;
}

/* The library's part of a -some call, after k of ours: completes the
 * program's own requests into indices and statuses from k (test: without
 * waiting). Returns the total; MPI_UNDEFINED when nothing at all is active. */
static int library_some(int n, MPI_Request *requests, dpc_req_t **ours, MPI_Request *copy,
                        int k, bool test, int *indices, MPI_Status *statuses, int *rc)
{
    MPI_Request *seen = masked(n, requests, ours, copy);
    MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : statuses + k;
    int got = 0;
    int e = (test ? PMPI_Testsome : PMPI_Waitsome)(n, seen, &got, indices + k, st);
    unmask(n, requests, seen, ours);
    if (e != MPI_SUCCESS)
        *rc = e;
    if (got == MPI_UNDEFINED)
        return k ? k : MPI_UNDEFINED;
    return k + got;
}

DPCOLL_API int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    bool nb = count > 0 && dpc_nbc_running_in(count, requests, NULL) > 0;
    if ((!live() && !nb) || count <= 0)
        return PMPI_Waitany(count, requests, index, status);
    MPI_Request *copy;
    dpc_req_t **ours = scratch_for(count, &copy);
    if (!ours)
        return MPI_ERR_NO_MEM;
    int rc, flag = 0;
    unsigned turn = 0;
    for (;;) {
        int pending = settle_all(count, requests, false, ours);
        int i = first_unreported(count, ours);
        if (i >= 0) {
            *index = i;
            rc = report(&requests[i], ours[i], status);
            break;
        }
        MPI_Request *seen = masked(count, requests, ours, copy);
        /* (nothing of ours running: the library's wait on the rest, which
         * says MPI_UNDEFINED when none of them is active) */
        rc = pending || nb ? PMPI_Testany(count, seen, index, &flag, status)
                           : PMPI_Waitany(count, seen, index, status);
        unmask(count, requests, seen, ours);
        /* (tested with nothing active at all: MPI_UNDEFINED, as a wait) */
        if ((!pending && !nb) || rc != MPI_SUCCESS ||
            (flag && (*index != MPI_UNDEFINED || !pending)))
            break;
        poll_turn(&turn);
    }
    free(ours);
    return rc;
}

DPCOLL_API int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag,
                           MPI_Status *status)
{
    if (!live() || count <= 0)
        return PMPI_Testany(count, requests, index, flag, status);
    MPI_Request *copy;
    dpc_req_t **ours = scratch_for(count, &copy);
    if (!ours)
        return MPI_ERR_NO_MEM;
    int pending = settle_all(count, requests, false, ours), rc;
    int i = first_unreported(count, ours);
    if (i >= 0) {
        *index = i;
        *flag = 1;
        rc = report(&requests[i], ours[i], status);
    } else {
        MPI_Request *seen = masked(count, requests, ours, copy);
        rc = PMPI_Testany(count, seen, index, flag, status);
        unmask(count, requests, seen, ours);
        if (rc == MPI_SUCCESS && *flag && *index == MPI_UNDEFINED && pending)
            *flag = 0;       /* ours are still active: not "none active" */
    }
    free(ours);
    return rc;
}

DPCOLL_API int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                            MPI_Status statuses[])
{
    bool nb = incount > 0 && dpc_nbc_running_in(incount, requests, NULL) > 0;
    if ((!live() && !nb) || incount <= 0)
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    MPI_Request *copy;
    dpc_req_t **ours = scratch_for(incount, &copy);
    if (!ours)
        return MPI_ERR_NO_MEM;
    int rc = MPI_SUCCESS;
    unsigned turn = 0;
    for (;;) {
        int pending = settle_all(incount, requests, false, ours);
        int k = report_all(incount, requests, ours, indices, statuses, &rc);
        /* with some of ours done, or none left running: the library's
         * requests too (tested, or waited for), then done */
        *outcount = library_some(incount, requests, ours, copy, k, k > 0 || pending || nb,
                                 indices, statuses, &rc);
        if ((!pending && !nb) || rc != MPI_SUCCESS ||
            (*outcount != 0 && (*outcount != MPI_UNDEFINED || !pending)))
            break;
        poll_turn(&turn);
    }
    free(ours);
    return rc;
}

DPCOLL_API int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                            MPI_Status statuses[])
{
    if (!live() || incount <= 0)
        return PMPI_Testsome(incount, requests, outcount, indices, statuses);
    MPI_Request *copy;
    dpc_req_t **ours = scratch_for(incount, &copy);
    if (!ours)
        return MPI_ERR_NO_MEM;
    int rc = MPI_SUCCESS;
    int pending = settle_all(incount, requests, false, ours);
    int k = report_all(incount, requests, ours, indices, statuses, &rc);
    *outcount = library_some(incount, requests, ours, copy, k, true, indices, statuses, &rc);
    if (*outcount == MPI_UNDEFINED && pending)
        *outcount = 0;       /* ours are still active: not "none active" */
    free(ours);
    return rc;
}

DPCOLL_API int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    dpc_req_t *op = live() ? find(request) : NULL;
    if (op && !settle(op, false)) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    int rc = PMPI_Request_get_status(request, flag, status);
    /* (the request stays active: its end is reported by the call that
     * completes it, so only the error here) */
    if (rc == MPI_SUCCESS && *flag && op && op->unreported && op->err != MPI_SUCCESS) {
        if (status != MPI_STATUS_IGNORE)
            status->MPI_ERROR = op->err;
        rc = op->err;
    }
    return rc;
}

DPCOLL_API int MPI_Request_free(MPI_Request *request)
{
    dpc_req_t *op = live() && request ? find(*request) : NULL;
    if (!op)
        return PMPI_Request_free(request);
    /* an active one runs to its end first: its buffers are in use until then */
    if (!op->completed) {
        settle(op, true);
        PMPI_Wait(request, MPI_STATUS_IGNORE);
    }
    retire(op);
    int rc = PMPI_Request_free(request);
    __atomic_sub_fetch(&dpc_persistent_live, 1, __ATOMIC_RELAXED);
    dpc_nbc_destroy(op);
    return rc;
}
