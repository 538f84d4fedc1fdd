/*
 * Errors go through the communicator's error handler as MPI error codes of
 * the right class whose string names the call and the argument, so
 * MPI_ERRORS_RETURN callers get a code they can print with MPI_Error_string,
 * and the default handler's abort says what was wrong. Codes are made once
 * per distinct message (MPI has no way to release them), up to a bound.
 */
#include "config.h"
#include "shim.h"
#include "dpc_log.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_CODES 128

static struct { int cls, code; char msg[MPI_MAX_ERROR_STRING]; } codes[MAX_CODES];
static int ncodes;

static int code_for(int cls, const char *msg)
{
    for (int i = 0; i < ncodes; i++)
        if (codes[i].cls == cls && !strcmp(codes[i].msg, msg))
            return codes[i].code;
    int code;
    if (ncodes == MAX_CODES || PMPI_Add_error_code(cls, &code) != MPI_SUCCESS ||
        PMPI_Add_error_string(code, msg) != MPI_SUCCESS)
        return cls;
    codes[ncodes].cls = cls;
    codes[ncodes].code = code;
    snprintf(codes[ncodes].msg, sizeof(codes[ncodes].msg), "%s", msg);
    ncodes++;
    return code;
}

int dpc_raise(MPI_Comm comm, int errclass, const char *fmt, ...)
{
    char msg[MPI_MAX_ERROR_STRING];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&dpc_g.lock);
    int code = code_for(errclass, msg);
    pthread_mutex_unlock(&dpc_g.lock);
    if (comm == MPI_COMM_NULL)
        comm = MPI_COMM_WORLD;    /* no handler of its own: MPICH uses this one */
    MPI_Errhandler eh;
    if (PMPI_Comm_get_errhandler(comm, &eh) == MPI_SUCCESS) {
        if (eh != MPI_ERRORS_RETURN)
            dpc_log(DPC_LOG_ERROR, "%s", msg);   /* about to abort: say why */
        else
            dpc_log(DPC_LOG_INFO, "%s", msg);
        if (eh != MPI_ERRHANDLER_NULL)
            PMPI_Errhandler_free(&eh);
    }
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}
