/*
 * A nonblocking collective of the MPI library's on host copies of device
 * buffers (a reduction that goes to the MPI library: a program's op we do
 * not run, a type we do not reduce), handed to the program as a request
 * that completes when the library's does, once the result is back on the
 * device.
 *
 * Why not wait for the library's call inside the nonblocking call: then the
 * call blocks until every member has started the same collective. MPI lets
 * ranks start collectives on different communicators in different orders;
 * a member that first enters a blocking collective on another communicator
 * which includes this rank waits there for this rank, which waits in its
 * "nonblocking" call for that member: a deadlock (test_fakedev_fuzz seeds 2
 * and 7 at 3 ranks, once it drew such calls).
 *
 * The request is an MPICH extended generalized request: its poll function
 * (MPI_Test, MPI_Wait, ...) tests the library's request, its wait function
 * (MPI_Waitall) waits for it; either then copies the result back to the
 * device and completes the request. Both run in the program's thread,
 * inside its MPI call.
 */
#include "config.h"
#include "stage.h"
#include "dpc_log.h"
#include <stdbool.h>
#include <stdlib.h>

typedef struct staged_mpi {
    MPI_Request inner;      /* the MPI library's call on the host copies */
    MPI_Request outer;      /* what the program holds */
    dpc_stage_t ss, rs;
    const char *call;
    int err;                /* the call's outcome, once finished */
    bool finished;
} staged_mpi_t;

/* The library's call has ended (rc: its outcome): the result goes back,
 * and (complete) the program's request completes. */
static void finish(staged_mpi_t *m, int rc, bool complete)
{
    if (rc == MPI_SUCCESS && m->rs.host && dpc_stage_out(&m->rs) != MPI_SUCCESS) {
        dpc_log(DPC_LOG_ERROR, "%s: cannot copy the result back to the device", m->call);
        rc = MPI_ERR_OTHER;
    } else if (rc != MPI_SUCCESS) {
        dpc_log(DPC_LOG_ERROR, "%s: the MPI library's call on the host copies failed", m->call);
    }
    dpc_stage_free(&m->ss);
    dpc_stage_free(&m->rs);
    m->err = rc;
    m->finished = true;
    if (complete)
        PMPI_Grequest_complete(m->outer);
}

static int sm_poll(void *extra, MPI_Status *status)
{
    staged_mpi_t *m = extra;
    (void)status;
    if (m->finished)
        return MPI_SUCCESS;
    int flag = 0;
    int rc = PMPI_Test(&m->inner, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || flag)
        finish(m, rc, true);
    return MPI_SUCCESS;
}

static int sm_wait(int count, void **extras, double timeout, MPI_Status *status)
{
    (void)timeout;
    (void)status;
    for (int i = 0; i < count; i++) {
        staged_mpi_t *m = extras[i];
        if (!m->finished)
            finish(m, PMPI_Wait(&m->inner, MPI_STATUS_IGNORE), true);
    }
    return MPI_SUCCESS;
}

static int sm_query(void *extra, MPI_Status *status)
{
    const staged_mpi_t *m = extra;
    return dpc_collective_status(status, m->err);
}

static int sm_free(void *extra)
{
    staged_mpi_t *m = extra;
    /* (MPI_Request_free before the end: nothing would test it again, so it
     * is finished here, and the result still reaches the device; the
     * request itself is on its way out) */
    if (!m->finished)
        finish(m, PMPI_Wait(&m->inner, MPI_STATUS_IGNORE), false);
    free(m);
    return MPI_SUCCESS;
}

static int sm_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;   /* a collective cannot be cancelled: it runs to its end */
}

int dpc_stage_nb_request(dpc_stage_t *ss, dpc_stage_t *rs, const char *call, MPI_Request *req)
{
    staged_mpi_t *m = calloc(1, sizeof(*m));
    if (!m)
        return MPI_ERR_NO_MEM;
    m->inner = *req;
    m->ss = *ss;
    m->rs = *rs;
    m->call = call;
    int rc = PMPIX_Grequest_start(sm_query, sm_free, sm_cancel, sm_poll, sm_wait, m, &m->outer);
    if (rc != MPI_SUCCESS) {
        free(m);
        return rc;
    }
    /* the stages are the request's now */
    ss->host = NULL;
    rs->host = NULL;
    *req = m->outer;
    return MPI_SUCCESS;
}
