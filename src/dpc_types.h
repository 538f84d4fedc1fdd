/* Element types, reduction operations and memory types the core understands.
 * They mirror MPI's predefined datatypes and ops; the shim maps MPI handles to
 * these, and the core never sees an MPI handle. */
#ifndef DPC_TYPES_H
#define DPC_TYPES_H

#include <stddef.h>
#include <stdbool.h>

typedef enum {
    DPC_INT8, DPC_UINT8, DPC_INT16, DPC_UINT16,
    DPC_INT32, DPC_UINT32, DPC_INT64, DPC_UINT64,
    DPC_FLOAT16,      /* IEEE binary16, reduced in float */
    DPC_BFLOAT16,     /* bfloat16 (upper half of a float), reduced in float */
    DPC_FLOAT, DPC_DOUBLE, DPC_LONG_DOUBLE,
    DPC_BOOL,         /* C _Bool */
    DPC_BYTE,         /* opaque bytes: bitwise ops only */
    /* value/index pairs of MPI's MINLOC/MAXLOC, C layout */
    DPC_FLOAT_INT, DPC_DOUBLE_INT, DPC_LONG_INT, DPC_2INT, DPC_SHORT_INT,
    DPC_LONG_DOUBLE_INT,
    /* complex numbers, C99 layout (real part, then imaginary): SUM and PROD */
    DPC_COMPLEX_FLOAT, DPC_COMPLEX_DOUBLE,
    DPC_DTYPE_COUNT
} dpc_dtype_t;

typedef enum {
    DPC_OP_SUM, DPC_OP_PROD, DPC_OP_MIN, DPC_OP_MAX,
    DPC_OP_LAND, DPC_OP_LOR, DPC_OP_LXOR,
    DPC_OP_BAND, DPC_OP_BOR, DPC_OP_BXOR,
    DPC_OP_MINLOC, DPC_OP_MAXLOC,
    DPC_OP_COUNT,   /* the predefined ops above: each has kernels */
    /* A program's own op (MPI_Op_create), commutative: no kernel; a schedule
     * applies it through its caller's callback (dpc_sched_params_t
     * .user_reduce), on host memory only, to elements of any type of its
     * size (the type stands in for the program's datatype) */
    DPC_OP_USER = DPC_OP_COUNT,
    /* The same for an op that does not commute: MPI defines its result as
     * the operands combined in rank order, x0 op x1 op ... op x(p-1), so
     * only the algorithms that combine in that order may run it
     * (DPC_ALGO_RANK_ORDER) */
    DPC_OP_USER_ORDERED
} dpc_op_t;

/* A program's op, commutative or not: applied through the callback. */
static inline bool dpc_op_is_user(dpc_op_t op)
{
    return op == DPC_OP_USER || op == DPC_OP_USER_ORDERED;
}

/* Where a buffer lives. PSEUDO_DEVICE is host memory that the tests mark as
 * "device" to prove that host code never touches device buffers. */
typedef enum {
    DPC_MEM_HOST,
    DPC_MEM_CUDA,
    DPC_MEM_PSEUDO_DEVICE,
    DPC_MEM_COUNT
} dpc_memtype_t;

size_t dpc_dtype_size(dpc_dtype_t dt);
const char *dpc_dtype_name(dpc_dtype_t dt);
const char *dpc_op_name(dpc_op_t op);
int dpc_dtype_from_name(const char *name);   /* -1 if unknown */
int dpc_op_from_name(const char *name);      /* -1 if unknown */
/* True when MPI defines op on dt (and so do our kernels). */
bool dpc_op_valid(dpc_op_t op, dpc_dtype_t dt);
/* Number of leading bytes of one element that carry its value (long double
 * has 6 bytes of padding on x86-64); the rest must not be compared. */
void dpc_dtype_value_bytes(dpc_dtype_t dt, size_t *off1, size_t *len1,
                           size_t *off2, size_t *len2);

#endif
