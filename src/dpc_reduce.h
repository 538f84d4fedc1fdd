/* Host reduction kernels: dst[i] = a[i] OP b[i] for every MPI predefined op
 * over the types it applies to. dst may be a or b (exactly), never a partial
 * overlap. a is the left operand: algorithms pass the lower-ranked
 * contribution there so that the order of operands, and so every bit of the
 * result, is the same on every rank. */
#ifndef DPC_REDUCE_H
#define DPC_REDUCE_H

#include "dpc_status.h"
#include "dpc_types.h"

typedef void (*dpc_reduce_fn_t)(void *dst, const void *a, const void *b, size_t n);

/* NULL when MPI does not define op on dt. */
dpc_reduce_fn_t dpc_reduce_kernel(dpc_op_t op, dpc_dtype_t dt);

dpc_status_t dpc_reduce_host(void *dst, const void *a, const void *b, size_t count,
                             dpc_dtype_t dt, dpc_op_t op);

/* A program's op (DPC_OP_USER) in MPI's form: inout[i] = in[i] OP inout[i]
 * for count elements, in place. */
typedef void (*dpc_user_reduce_fn_t)(void *ctx, const void *in, void *inout, size_t count);

/* dst[i] = a[i] OP b[i] (a the left operand, as above) by such a function,
 * es bytes an element (at most DPC_USER_ELEM_MAX, else
 * DPC_ERR_UNSUPPORTED): b is copied into dst first (a piece at a time), or, where dst is a,
 * piece by piece through a buffer on the stack (the function writes its
 * second argument only, and a is read before it is overwritten). */
#define DPC_USER_ELEM_MAX 1024
/* ... and into a separate dst a piece of this many bytes at a time (the
 * copy of b, then the function on it, while it is in the L1 cache) */
#define DPC_USER_PIECE_BYTES 8192
dpc_status_t dpc_reduce_user(void *dst, const void *a, const void *b, size_t count, size_t es,
                             dpc_user_reduce_fn_t fn, void *ctx);

/* buf[i] /= divisor, once, rounded as the type rounds (16-bit floats through
 * float): the averaging step after a sum. Floating-point types only. */
dpc_status_t dpc_div_host(void *buf, size_t count, dpc_dtype_t dt, int divisor);

#endif
