/* Argument checks shared by the wrappers: each returns MPI_SUCCESS or an
 * error code already raised through comm's handler, with a message that
 * names the call and the argument. All run before any communication. */
#ifndef DPC_CHECK_H
#define DPC_CHECK_H

#include "shim.h"

int dpc_check_count(MPI_Comm comm, const char *call, const char *arg, int count);
int dpc_check_counts(MPI_Comm comm, const char *call, const char *arg, const int *counts, int n);
int dpc_check_type(MPI_Comm comm, const char *call, const char *arg, MPI_Datatype dt,
                   dpc_dtinfo_t *ti);
int dpc_check_buf(MPI_Comm comm, const char *call, const char *arg, const void *buf, long long count);
/* Reductions: op must be valid on the datatype's basic type. Returns
 * MPI_SUCCESS with *op_p = dpc op, or -1 if it must go to PMPI (a user op
 * we do not run, a type we do not reduce), or an error code. A program's op
 * that runs here (user_op.c) gives DPC_OP_USER, fills *u and makes *ti
 * describe dt as one stand-in element type. */
int dpc_check_op(MPI_Comm comm, const char *call, MPI_Op op, MPI_Datatype dt, dpc_dtinfo_t *ti,
                 int *op_p, dpc_user_op_t *u, dpc_why_t *why);

#endif
