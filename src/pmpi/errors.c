/*
 * Errors go through the communicator's error handler with the MPI error
 * class (MPI_ERR_COUNT, ...). The message that names the call and the
 * argument is printed when the handler will abort, and kept for the calling
 * thread (dpcoll_error_message) when it returns.
 *
 * Why not a user error code with the message as its string: MPICH 4.0.2
 * garbles the strings of codes added to predefined classes
 * (MPI_Add_error_code(MPI_ERR_OP) + MPI_Add_error_string give a code whose
 * MPI_Error_string is an unrelated error stack), and a class of our own
 * would hide the standard class from MPI_Error_class.
 */
#include "config.h"
#include "shim.h"
#include "dpc_log.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static __thread char last_error[MPI_MAX_ERROR_STRING];

int dpc_raise(MPI_Comm comm, int errclass, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    if (comm == MPI_COMM_NULL)
        comm = MPI_COMM_WORLD;    /* no handler of its own: MPICH uses this one */
    MPI_Errhandler eh;
    if (PMPI_Comm_get_errhandler(comm, &eh) == MPI_SUCCESS) {
        if (eh != MPI_ERRORS_RETURN) {
            dpc_log(DPC_LOG_ERROR, "%s", last_error);   /* about to abort: say why */
            fflush(stderr);
            if (eh == MPI_ERRORS_ARE_FATAL)
                usleep(100000);   /* let the launcher forward it before the job dies */
        }
        else
            dpc_log(DPC_LOG_INFO, "%s", last_error);
        if (eh != MPI_ERRHANDLER_NULL)
            PMPI_Errhandler_free(&eh);
    }
    PMPI_Comm_call_errhandler(comm, errclass);
    return errclass;
}

DPCOLL_API const char *dpcoll_error_message(void)
{
    return last_error;
}
