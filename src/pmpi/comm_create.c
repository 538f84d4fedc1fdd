/*
 * A new communicator's libdpcoll state, set up where the MPI library makes
 * the communicator.
 *
 * The state needs a context id agreed by all members (ctx.c), which is a
 * collective of its own. Made at the communicator's first collective, that
 * agreement made a nonblocking first call block until every member had
 * made its own first call on that communicator; ranks that post their
 * first calls on two new communicators in different orders (MPI allows any
 * order across communicators) then waited for each other for good. The
 * constructors below are collective over the new communicator's members and
 * ordered like any collective, so the agreement goes there, where the
 * members are together anyway (as the MPI library allocates its own context
 * ids). MPI_Comm_idup cannot wait for the agreement: it posts one on the
 * parent, nonblocking, which the duplicate's first collective picks up
 * (ctx.c). An intracommunicator still set up at its first collective is
 * one whose set-up failed here, or an MPI_Comm_idup duplicate whose
 * agreement found no id (ctx.c).
 *
 * A set-up that fails here is not the program's error yet (it may never
 * call a collective on the communicator): it goes unreported, and the first
 * collective tries again and reports it.
 */
#include "config.h"
#include "shim.h"

static void prepare(MPI_Comm comm)
{
    int inter = 0;
    if (!dpc_g.active || comm == MPI_COMM_NULL ||
        PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return;
    MPI_Errhandler eh;
    if (PMPI_Comm_get_errhandler(comm, &eh) != MPI_SUCCESS)
        return;
    PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    dpc_comm_t *c;
    (void)dpc_comm_get(comm, "communicator set-up", &c);
    PMPI_Comm_set_errhandler(comm, eh);
    PMPI_Errhandler_free(&eh);
}

/* each: the MPI library's constructor, then our state for what it made */
#define PREPARED(call) \
    do { \
        int rc_ = (call); \
        if (rc_ == MPI_SUCCESS) \
            prepare(*newcomm); \
        return rc_; \
    } while (0)

DPCOLL_API int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    PREPARED(PMPI_Comm_dup(comm, newcomm));
}

DPCOLL_API int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    PREPARED(PMPI_Comm_dup_with_info(comm, info, newcomm));
}

DPCOLL_API int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
    int rc = PMPI_Comm_idup(comm, newcomm, request);
    if (rc == MPI_SUCCESS)
        dpc_ctx_idup_post(comm, *newcomm);
    return rc;
}

DPCOLL_API int MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm,
                                       MPI_Request *request)
{
    int rc = PMPI_Comm_idup_with_info(comm, info, newcomm, request);
    if (rc == MPI_SUCCESS)
        dpc_ctx_idup_post(comm, *newcomm);
    return rc;
}

DPCOLL_API int MPI_Comm_create_from_group(MPI_Group group, const char *stringtag, MPI_Info info,
                                          MPI_Errhandler errhandler, MPI_Comm *newcomm)
{
    PREPARED(PMPI_Comm_create_from_group(group, stringtag, info, errhandler, newcomm));
}

DPCOLL_API int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    PREPARED(PMPI_Comm_split(comm, color, key, newcomm));
}

DPCOLL_API int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                                   MPI_Comm *newcomm)
{
    PREPARED(PMPI_Comm_split_type(comm, split_type, key, info, newcomm));
}

DPCOLL_API int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    PREPARED(PMPI_Comm_create(comm, group, newcomm));
}

DPCOLL_API int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    PREPARED(PMPI_Comm_create_group(comm, group, tag, newcomm));
}

DPCOLL_API int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[],
                               int reorder, MPI_Comm *newcomm)
{
    PREPARED(PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm));
}

DPCOLL_API int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    PREPARED(PMPI_Cart_sub(comm, remain_dims, newcomm));
}

DPCOLL_API int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newcomm)
{
    PREPARED(PMPI_Intercomm_merge(intercomm, high, newcomm));
}

DPCOLL_API int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[],
                                int reorder, MPI_Comm *newcomm)
{
    PREPARED(PMPI_Graph_create(comm, nnodes, index, edges, reorder, newcomm));
}

DPCOLL_API int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[],
                                              const int sourceweights[], int outdegree,
                                              const int destinations[], const int destweights[],
                                              MPI_Info info, int reorder, MPI_Comm *newcomm)
{
    PREPARED(PMPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree,
                                             destinations, destweights, info, reorder, newcomm));
}

DPCOLL_API int MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[], const int degrees[],
                                     const int destinations[], const int weights[], MPI_Info info,
                                     int reorder, MPI_Comm *newcomm)
{
    PREPARED(PMPI_Dist_graph_create(comm, n, sources, degrees, destinations, weights, info, reorder,
                                    newcomm));
}
