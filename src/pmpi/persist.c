/*
 * MPI-4 persistent collectives (MPI_Allreduce_init and the others) on
 * libdpcoll.
 *
 * A persistent request must stay valid across MPI_Start / MPI_Wait cycles,
 * which a generalized request cannot do (completing one frees it). So the
 * handle we give out is a real persistent request of the MPI library: a
 * zero-byte MPI_Recv_init on a private duplicate of MPI_COMM_SELF, with a
 * tag of its own. MPI_Start starts our collective and that receive; when the
 * collective has ended, the matching zero-byte send to ourselves completes
 * the receive, and the MPI library's own MPI_Wait/MPI_Test family does the
 * rest, mixed with any other request. The send must come from a thread
 * inside an MPI call, so the completion calls below look for our requests
 * first (a counter makes that free when there are none).
 */
#include "config.h"
#include "shim.h"
#include "dpc_log.h"
#include "reqmap.h"
#include <sched.h>
#include <stdlib.h>

int dpc_persistent_live;   /* atomic: read bare on every MPI_Wait/Test */
/* The library's own half of each request: a receive on self_comm with a
 * tag of its own (a tag two requests shared would let one request's send
 * complete the other's receive). Both made race-free: self_comm at
 * MPI_Init, the tags by an atomic counter (threads may make persistent
 * requests at once). */
static MPI_Comm self_comm = MPI_COMM_NULL;
static unsigned next_tag, tag_ub = 32767;

static inline int live(void)
{
    return __atomic_load_n(&dpc_persistent_live, __ATOMIC_RELAXED);
}

int dpc_persist_init(void)
{
    int *ub, found = 0;
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    if (found)
        tag_ub = (unsigned)*ub;
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
    int tag = (int)(__atomic_fetch_add(&next_tag, 1u, __ATOMIC_RELAXED) % (tag_ub + 1u));
    MPI_Request r;
    int rc = PMPI_Recv_init(NULL, 0, MPI_BYTE, 0, tag, self_comm, &r);
    if (rc != MPI_SUCCESS)
        return rc;
    op->tag = tag;
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

/* Start one of ours: our collective, then the library's receive. */
static int start(dpc_req_t *op)
{
    if (!op->completed)
        return dpc_raise(op->comm, MPI_ERR_REQUEST, "MPI_Start: the persistent %s is still "
                         "active (complete it with MPI_Wait or MPI_Test first)", op->job->call);
    op->err = MPI_SUCCESS;
    int rc = dpc_op_start(op);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = PMPI_Start(&op->req);
    if (rc != MPI_SUCCESS) {
        if (!dpc_op_ended(op))
            dpc_op_wait(op);
        dpc_op_complete(op);
        return dpc_raise(op->comm, rc, "MPI_Start: cannot start the request of %s", op->job->call);
    }
    dpc_nbc_wake(op);
    return MPI_SUCCESS;
}

/* Our collective behind an active request: if it has ended (or, with
 * block, once it has), take its result and let the library's receive
 * complete. Returns whether it has ended. */
static bool settle_in(dpc_req_t *op, bool block, bool series)
{
    if (op->completed)
        return true;
    if (block) {
        if (!dpc_op_ended(op))
            (series ? dpc_op_wait_in_series : dpc_op_wait)(op);
    } else {
        dpc_lock(true);
        if (op->running && dpc_g.drivers == 0)
            dpc_ops_progress_locked();
        dpc_unlock(true);
    }
    if (!dpc_op_ended(op))
        return false;
    dpc_op_complete(op);
    PMPI_Send(NULL, 0, MPI_BYTE, 0, op->tag, self_comm);
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

/* After the library completed request i: our collective's error, if any. */
static int fix_status(dpc_req_t *op, MPI_Status *st)
{
    if (!op || op->err == MPI_SUCCESS)
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

DPCOLL_API int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    dpc_req_t *op = live() && request ? find(*request) : NULL;
    if (op)
        settle(op, true);
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
static int fix_statuses(int n, const int *which, dpc_req_t **ours, MPI_Status *st, int rc)
{
    int bad = 0;
    for (int k = 0; k < n; k++) {
        int i = which ? which[k] : k;
        if (ours[i] && ours[i]->err != MPI_SUCCESS) {
            bad = 1;
            if (st != MPI_STATUSES_IGNORE)
                st[k].MPI_ERROR = ours[i]->err;
        }
    }
    return bad && rc == MPI_SUCCESS ? MPI_ERR_IN_STATUS : rc;
}

DPCOLL_API int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    if (!live() || count <= 0)
        return PMPI_Waitall(count, requests, statuses);
    dpc_req_t **ours = calloc((size_t)count, sizeof(*ours));
    if (!ours)
        return PMPI_Waitall(count, requests, statuses);
    settle_all(count, requests, true, ours);
    int rc = PMPI_Waitall(count, requests, statuses);
    rc = fix_statuses(count, NULL, ours, statuses, rc);
    free(ours);
    return rc;
}

DPCOLL_API int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    if (!live() || count <= 0)
        return PMPI_Testall(count, requests, flag, statuses);
    dpc_req_t **ours = calloc((size_t)count, sizeof(*ours));
    if (!ours)
        return PMPI_Testall(count, requests, flag, statuses);
    int rc = MPI_SUCCESS;
    if (settle_all(count, requests, false, ours)) {
        *flag = 0;     /* not all done: complete none, as Testall must */
    } else {
        rc = PMPI_Testall(count, requests, flag, statuses);
        if (*flag)
            rc = fix_statuses(count, NULL, ours, statuses, rc);
    }
    free(ours);
    return rc;
}

DPCOLL_API int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    if (!live() || count <= 0)
        return PMPI_Waitany(count, requests, index, status);
    dpc_req_t **ours = calloc((size_t)count, sizeof(*ours));
    if (!ours)
        return MPI_ERR_NO_MEM;
    int rc, flag = 0;
    for (;;) {
        int pending = settle_all(count, requests, false, ours);
        if (!pending) {      /* nothing of ours left to wait for: the library's wait */
            rc = PMPI_Waitany(count, requests, index, status);
            break;
        }
        rc = PMPI_Testany(count, requests, index, &flag, status);
        if (rc != MPI_SUCCESS || flag)
            break;
        sched_yield();
    }
    if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED)
        rc = fix_status(ours[*index], status);
    free(ours);
    return rc;
}

DPCOLL_API int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag,
                           MPI_Status *status)
{
    if (!live() || count <= 0)
        return PMPI_Testany(count, requests, index, flag, status);
    dpc_req_t **ours = calloc((size_t)count, sizeof(*ours));
    if (!ours)
        return MPI_ERR_NO_MEM;
    settle_all(count, requests, false, ours);
    int rc = PMPI_Testany(count, requests, index, flag, status);
    if (rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED)
        rc = fix_status(ours[*index], status);
    free(ours);
    return rc;
}

DPCOLL_API int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                            MPI_Status statuses[])
{
    if (!live() || incount <= 0)
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    dpc_req_t **ours = calloc((size_t)incount, sizeof(*ours));
    if (!ours)
        return MPI_ERR_NO_MEM;
    int rc;
    for (;;) {
        int pending = settle_all(incount, requests, false, ours);
        rc = pending ? PMPI_Testsome(incount, requests, outcount, indices, statuses)
                     : PMPI_Waitsome(incount, requests, outcount, indices, statuses);
        if (rc != MPI_SUCCESS || *outcount != 0)
            break;
        sched_yield();
    }
    if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED)
        rc = fix_statuses(*outcount, indices, ours, statuses, rc);
    free(ours);
    return rc;
}

DPCOLL_API int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                            MPI_Status statuses[])
{
    if (!live() || incount <= 0)
        return PMPI_Testsome(incount, requests, outcount, indices, statuses);
    dpc_req_t **ours = calloc((size_t)incount, sizeof(*ours));
    if (!ours)
        return MPI_ERR_NO_MEM;
    settle_all(incount, requests, false, ours);
    int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED)
        rc = fix_statuses(*outcount, indices, ours, statuses, rc);
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
    return rc == MPI_SUCCESS && *flag ? fix_status(op, status) : rc;
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
