/*
 * mpi_f08's request calls, through libdpcoll's.
 *
 * MPICH's `use mpi_f08` bindings of MPI_Start, MPI_Wait, MPI_Test and
 * their -all, -any and -some forms, MPI_Request_get_status and
 * MPI_Request_free call PMPI_Start, PMPI_Wait ... themselves, past our
 * wrappers (fortran.c), and a persistent collective of ours neither starts
 * nor ends without them (persist.c): the handle is an MPI receive that is
 * never started. So libdpcoll defines these bindings too, found ahead of
 * the MPI library's as its mpi_init_f08_ is, and each calls our C function
 * of its name, which handles every kind of request, ours or the library's.
 * (Where they are not found first, dpc_f08_bypasses_us says so, and
 * persistent collectives go to the MPI library.)
 *
 * The arguments as gfortran passes MPICH's interfaces (they are not
 * BIND(C)): all by reference, and an absent optional ierror as a null
 * pointer. A TYPE(MPI_Request) is one default INTEGER, the handle itself
 * (MPICH's MPI_Request_f2c is a cast); a TYPE(MPI_Status) is the five ints
 * of the C MPI_Status in the same order, so arrays of either are used as
 * they are, as MPICH's own bindings do (checked below). MPI_STATUS_IGNORE
 * and MPI_STATUSES_IGNORE are the objects MPI_F08_STATUS_IGNORE and
 * MPI_F08_STATUSES_IGNORE point to. A LOGICAL is 4 bytes, .true. being 1.
 * Indices are Fortran's, from 1.
 */
#include "config.h"
#include "shim.h"
#include <stddef.h>

_Static_assert(sizeof(MPI_Request) == sizeof(MPI_Fint), "MPI_Request is not an MPI_Fint");
_Static_assert(sizeof(MPI_Status) == sizeof(MPI_F08_status) &&
                   offsetof(MPI_Status, MPI_SOURCE) == offsetof(MPI_F08_status, MPI_SOURCE) &&
                   offsetof(MPI_Status, MPI_TAG) == offsetof(MPI_F08_status, MPI_TAG) &&
                   offsetof(MPI_Status, MPI_ERROR) == offsetof(MPI_F08_status, MPI_ERROR) &&
                   offsetof(MPI_Status, count_lo) == offsetof(MPI_F08_status, count_lo),
               "MPI_Status and MPI_F08_status differ");

typedef MPI_Fint fint;

DPCOLL_API void mpi_start_f08_(fint *request, fint *ierror);
DPCOLL_API void mpi_startall_f08_(fint *count, fint *requests, fint *ierror);
DPCOLL_API void mpi_wait_f08_(fint *request, MPI_F08_status *status, fint *ierror);
DPCOLL_API void mpi_test_f08_(fint *request, fint *flag, MPI_F08_status *status, fint *ierror);
DPCOLL_API void mpi_waitall_f08_(fint *count, fint *requests, MPI_F08_status *statuses,
                                 fint *ierror);
DPCOLL_API void mpi_testall_f08_(fint *count, fint *requests, fint *flag,
                                 MPI_F08_status *statuses, fint *ierror);
DPCOLL_API void mpi_waitany_f08_(fint *count, fint *requests, fint *index,
                                 MPI_F08_status *status, fint *ierror);
DPCOLL_API void mpi_testany_f08_(fint *count, fint *requests, fint *index, fint *flag,
                                 MPI_F08_status *status, fint *ierror);
DPCOLL_API void mpi_waitsome_f08_(fint *incount, fint *requests, fint *outcount, fint *indices,
                                  MPI_F08_status *statuses, fint *ierror);
DPCOLL_API void mpi_testsome_f08_(fint *incount, fint *requests, fint *outcount, fint *indices,
                                  MPI_F08_status *statuses, fint *ierror);
DPCOLL_API void mpi_request_get_status_f08_(fint *request, fint *flag, MPI_F08_status *status,
                                            fint *ierror);
DPCOLL_API void mpi_request_free_f08_(fint *request, fint *ierror);

static inline MPI_Request *reqs(fint *r)
{
    return (MPI_Request *)r;
}

static inline MPI_Status *status_of(MPI_F08_status *s)
{
    return s == MPI_F08_STATUS_IGNORE ? MPI_STATUS_IGNORE : (MPI_Status *)s;
}

static inline MPI_Status *statuses_of(MPI_F08_status *s)
{
    return s == MPI_F08_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : (MPI_Status *)s;
}

static inline void done(fint *ierror, int rc)
{
    if (ierror)
        *ierror = rc;
}

/* C's flag (any int) as a Fortran LOGICAL */
static inline void logical(fint *flag, int c)
{
    *flag = c ? 1 : 0;
}

/* C's 0-based indices to Fortran's; MPI_UNDEFINED (negative) stays, and
 * so does an outcount of MPI_UNDEFINED (n < 0: none) */
static inline void from_1(fint *index, int n)
{
    for (int i = 0; i < n; i++)
        if (index[i] >= 0)
            index[i]++;
}

DPCOLL_API void mpi_start_f08_(fint *request, fint *ierror)
{
    done(ierror, MPI_Start(reqs(request)));
}

DPCOLL_API void mpi_startall_f08_(fint *count, fint *requests, fint *ierror)
{
    done(ierror, MPI_Startall(*count, reqs(requests)));
}

DPCOLL_API void mpi_wait_f08_(fint *request, MPI_F08_status *status, fint *ierror)
{
    done(ierror, MPI_Wait(reqs(request), status_of(status)));
}

DPCOLL_API void mpi_test_f08_(fint *request, fint *flag, MPI_F08_status *status, fint *ierror)
{
    int f = 0, rc = MPI_Test(reqs(request), &f, status_of(status));
    logical(flag, f);
    done(ierror, rc);
}

DPCOLL_API void mpi_waitall_f08_(fint *count, fint *requests, MPI_F08_status *statuses,
                                 fint *ierror)
{
    done(ierror, MPI_Waitall(*count, reqs(requests), statuses_of(statuses)));
}

DPCOLL_API void mpi_testall_f08_(fint *count, fint *requests, fint *flag,
                                 MPI_F08_status *statuses, fint *ierror)
{
    int f = 0, rc = MPI_Testall(*count, reqs(requests), &f, statuses_of(statuses));
    logical(flag, f);
    done(ierror, rc);
}

DPCOLL_API void mpi_waitany_f08_(fint *count, fint *requests, fint *index,
                                 MPI_F08_status *status, fint *ierror)
{
    int rc = MPI_Waitany(*count, reqs(requests), index, status_of(status));
    from_1(index, 1);
    done(ierror, rc);
}

DPCOLL_API void mpi_testany_f08_(fint *count, fint *requests, fint *index, fint *flag,
                                 MPI_F08_status *status, fint *ierror)
{
    int f = 0, rc = MPI_Testany(*count, reqs(requests), index, &f, status_of(status));
    from_1(index, 1);
    logical(flag, f);
    done(ierror, rc);
}

/* MPI_Waitsome or MPI_Testsome (one signature) */
static void some(int (*fn)(int, MPI_Request[], int *, int[], MPI_Status[]), fint *incount,
                 fint *requests, fint *outcount, fint *indices, MPI_F08_status *statuses,
                 fint *ierror)
{
    int rc = fn(*incount, reqs(requests), outcount, indices, statuses_of(statuses));
    if (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS)
        from_1(indices, *outcount);
    done(ierror, rc);
}

DPCOLL_API void mpi_waitsome_f08_(fint *incount, fint *requests, fint *outcount, fint *indices,
                                  MPI_F08_status *statuses, fint *ierror)
{
    some(MPI_Waitsome, incount, requests, outcount, indices, statuses, ierror);
}

DPCOLL_API void mpi_testsome_f08_(fint *incount, fint *requests, fint *outcount, fint *indices,
                                  MPI_F08_status *statuses, fint *ierror)
{
    some(MPI_Testsome, incount, requests, outcount, indices, statuses, ierror);
}

DPCOLL_API void mpi_request_get_status_f08_(fint *request, fint *flag, MPI_F08_status *status,
                                            fint *ierror)
{
    int f = 0, rc = MPI_Request_get_status(*reqs(request), &f, status_of(status));
    logical(flag, f);
    done(ierror, rc);
}

DPCOLL_API void mpi_request_free_f08_(fint *request, fint *ierror)
{
    done(ierror, MPI_Request_free(reqs(request)));
}
