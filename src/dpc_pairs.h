/* C layouts of MPI's value/index pair types (MPI_FLOAT_INT, ...), and of
 * its complex types (C99's float _Complex ..., Fortran's COMPLEX). */
#ifndef DPC_PAIRS_H
#define DPC_PAIRS_H

typedef struct { float v; int i; } dpc_float_int_t;
typedef struct { double v; int i; } dpc_double_int_t;
typedef struct { long v; int i; } dpc_long_int_t;
typedef struct { int v; int i; } dpc_2int_t;
typedef struct { short v; int i; } dpc_short_int_t;
typedef struct { long double v; int i; } dpc_long_double_int_t;
typedef struct { float re, im; } dpc_complex_float_t;
typedef struct { double re, im; } dpc_complex_double_t;

#endif
