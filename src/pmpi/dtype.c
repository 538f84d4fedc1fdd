/*
 * MPI datatypes and ops as the core sees them. A derived datatype made of one
 * predefined type (contiguous, vector, indexed, struct of floats ...) reduces
 * like that many elements of it: the decision follows the type signature,
 * which MPI makes every rank agree on, not the handle, which may differ.
 */
#include "config.h"
#include "shim.h"
#include <pthread.h>
#include <stdlib.h>

static const struct { MPI_Datatype mpi; int dpc; } named[] = {
    {MPI_SIGNED_CHAR, DPC_INT8}, {MPI_INT8_T, DPC_INT8},
    {MPI_UNSIGNED_CHAR, DPC_UINT8}, {MPI_UINT8_T, DPC_UINT8}, {MPI_BYTE, DPC_BYTE},
    {MPI_SHORT, DPC_INT16}, {MPI_INT16_T, DPC_INT16},
    {MPI_UNSIGNED_SHORT, DPC_UINT16}, {MPI_UINT16_T, DPC_UINT16},
    {MPI_INT, DPC_INT32}, {MPI_INT32_T, DPC_INT32},
    {MPI_UNSIGNED, DPC_UINT32}, {MPI_UINT32_T, DPC_UINT32},
    {MPI_LONG, sizeof(long) == 8 ? DPC_INT64 : DPC_INT32},
    {MPI_UNSIGNED_LONG, sizeof(long) == 8 ? DPC_UINT64 : DPC_UINT32},
    {MPI_LONG_LONG_INT, DPC_INT64}, {MPI_LONG_LONG, DPC_INT64}, {MPI_INT64_T, DPC_INT64},
    {MPI_UNSIGNED_LONG_LONG, DPC_UINT64}, {MPI_UINT64_T, DPC_UINT64},
    {MPI_FLOAT, DPC_FLOAT}, {MPI_DOUBLE, DPC_DOUBLE}, {MPI_LONG_DOUBLE, DPC_LONG_DOUBLE},
    {MPI_C_BOOL, DPC_BOOL},
    {MPI_FLOAT_INT, DPC_FLOAT_INT}, {MPI_DOUBLE_INT, DPC_DOUBLE_INT},
    {MPI_LONG_INT, DPC_LONG_INT}, {MPI_2INT, DPC_2INT}, {MPI_SHORT_INT, DPC_SHORT_INT},
    {MPI_LONG_DOUBLE_INT, DPC_LONG_DOUBLE_INT},
    {MPI_C_FLOAT_COMPLEX, DPC_COMPLEX_FLOAT}, {MPI_C_DOUBLE_COMPLEX, DPC_COMPLEX_DOUBLE},
    {MPI_CXX_FLOAT_COMPLEX, DPC_COMPLEX_FLOAT}, {MPI_CXX_DOUBLE_COMPLEX, DPC_COMPLEX_DOUBLE},
#ifdef MPIX_C_FLOAT16
    {MPIX_C_FLOAT16, DPC_FLOAT16},
#endif
};

/* Predefined types whose width the C compiler does not fix: Fortran's (a
 * Fortran program's MPI_Allreduce on MPI_REAL reaches our MPI_Allreduce
 * through the MPI library's Fortran binding) and MPI's own address and
 * count integers. Each maps by the size the MPI library gives it, so an
 * INTEGER of 8 bytes (gfortran -fdefault-integer-8 builds of MPICH) reduces
 * as int64. Left out, and so left to the MPI library: MPI_LOGICAL (its
 * true value is the Fortran compiler's: 1 for gfortran, -1 for others),
 * MPI_COMPLEX32 and MPI_REAL16 (quad precision, not long double) and the
 * Fortran pairs MPI_2REAL and MPI_2DOUBLE_PRECISION (their index is a
 * real, unlike any C pair). */
typedef enum { SIGNED, REAL, COMPLEX, PAIR_OF_INT } sized_kind_t;
static const struct { MPI_Datatype mpi; sized_kind_t kind; } sized[] = {
    {MPI_INTEGER, SIGNED}, {MPI_INTEGER1, SIGNED}, {MPI_INTEGER2, SIGNED},
    {MPI_INTEGER4, SIGNED}, {MPI_INTEGER8, SIGNED},
    {MPI_AINT, SIGNED}, {MPI_OFFSET, SIGNED}, {MPI_COUNT, SIGNED},
    {MPI_REAL, REAL}, {MPI_DOUBLE_PRECISION, REAL}, {MPI_REAL4, REAL}, {MPI_REAL8, REAL},
    {MPI_COMPLEX, COMPLEX}, {MPI_DOUBLE_COMPLEX, COMPLEX}, {MPI_COMPLEX8, COMPLEX},
    {MPI_COMPLEX16, COMPLEX},
    {MPI_2INTEGER, PAIR_OF_INT},
};
#define NSIZED (sizeof(sized) / sizeof(sized[0]))
static int sized_dpc[NSIZED];
static pthread_once_t sized_once = PTHREAD_ONCE_INIT;

static int dpc_of_size(sized_kind_t kind, int bytes)
{
    switch (kind) {
    case SIGNED:
        return bytes == 1 ? DPC_INT8 : bytes == 2 ? DPC_INT16 : bytes == 4 ? DPC_INT32
             : bytes == 8 ? DPC_INT64 : -1;
    case REAL:
        return bytes == 4 ? DPC_FLOAT : bytes == 8 ? DPC_DOUBLE : -1;
    case COMPLEX:
        return bytes == 8 ? DPC_COMPLEX_FLOAT : bytes == 16 ? DPC_COMPLEX_DOUBLE : -1;
    case PAIR_OF_INT:   /* two C ints, as MPI_2INT */
        return bytes == (int)(2 * sizeof(int)) ? DPC_2INT : -1;
    }
    return -1;
}

static void sized_resolve(void)
{
    for (size_t i = 0; i < NSIZED; i++) {
        int bytes = 0;
        sized_dpc[i] = sized[i].mpi != MPI_DATATYPE_NULL &&
                               PMPI_Type_size(sized[i].mpi, &bytes) == MPI_SUCCESS
                           ? dpc_of_size(sized[i].kind, bytes) : -1;
    }
}

static int map_named(MPI_Datatype dt)
{
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        if (named[i].mpi == dt)
            return named[i].dpc;
    /* (only once the MPI library is up: every caller is a wrapper that
     * found libdpcoll active) */
    pthread_once(&sized_once, sized_resolve);
    for (size_t i = 0; i < NSIZED; i++)
        if (sized[i].mpi == dt)
            return sized_dpc[i];
    return -1;
}

/* The one predefined type dt is built from, or -1 (mixed, or not mapped). */
static int basic_of(MPI_Datatype dt, int depth)
{
    int ni, na, nd, comb;
    if (depth > 16 || PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return -1;
    if (comb == MPI_COMBINER_NAMED)
        return map_named(dt);
    int *ints = malloc(sizeof(int) * (size_t)(ni + 1));
    MPI_Aint *aints = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
    int basic = -2;   /* none seen yet */
    if (ints && aints && types &&
        PMPI_Type_get_contents(dt, ni, na, nd, ints, aints, types) == MPI_SUCCESS) {
        for (int i = 0; i < nd; i++) {
            int b = basic_of(types[i], depth + 1);
            basic = basic == -2 || basic == b ? b : -1;
            int tni, tna, tnd, tc;
            PMPI_Type_get_envelope(types[i], &tni, &tna, &tnd, &tc);
            if (tc != MPI_COMBINER_NAMED)
                PMPI_Type_free(&types[i]);
        }
    }
    free(ints);
    free(aints);
    free(types);
    return basic < 0 ? -1 : basic;
}

int dpc_dtinfo(MPI_Datatype dt, dpc_dtinfo_t *ti)
{
    /* the common case, a predefined type we know: no MPI calls at all
     * (predefined types are contiguous, start at 0, extent = size; a
     * derived type's handle never equals a predefined one) */
    if (dt == dpc_g.bf16 && dt != MPI_DATATYPE_NULL) {   /* ours: 2 bytes, reduced as bfloat16 */
        ti->size = ti->extent = 2;
        ti->true_lb = 0;
        ti->contig = true;
        ti->basic = DPC_BFLOAT16;
        ti->nbasic = 1;
        return MPI_SUCCESS;
    }
    static DPC_TLS MPI_Datatype last_dt = MPI_DATATYPE_NULL;   /* calls repeat types */
    static DPC_TLS int last_named = -1;
    int named_dt;
    if (dt == last_dt && dt != MPI_DATATYPE_NULL) {
        named_dt = last_named;
    } else {
        named_dt = dt == MPI_DATATYPE_NULL ? -1 : map_named(dt);
        if (named_dt >= 0) {
            last_dt = dt;
            last_named = named_dt;
        }
    }
    if (named_dt >= 0) {
        ti->size = ti->extent = (MPI_Aint)dpc_dtype_size(named_dt);
        ti->true_lb = 0;
        ti->contig = true;
        ti->basic = named_dt;
        ti->nbasic = 1;
        return MPI_SUCCESS;
    }
    MPI_Count size;
    MPI_Aint lb, extent, true_extent;
    if (dt == MPI_DATATYPE_NULL || PMPI_Type_size_x(dt, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(dt, &ti->true_lb, &true_extent) != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    ti->size = (MPI_Aint)size;
    ti->extent = extent;
    ti->contig = size == extent && size == true_extent;
    ti->basic = basic_of(dt, 0);
    ti->nbasic = ti->basic >= 0 ? ti->size / (MPI_Aint)dpc_dtype_size(ti->basic) : 0;
    return MPI_SUCCESS;
}

int dpc_op_map(MPI_Op op)
{
    static const struct { MPI_Op mpi; int dpc; } ops[] = {
        {MPI_SUM, DPC_OP_SUM}, {MPI_PROD, DPC_OP_PROD}, {MPI_MIN, DPC_OP_MIN},
        {MPI_MAX, DPC_OP_MAX}, {MPI_LAND, DPC_OP_LAND}, {MPI_LOR, DPC_OP_LOR},
        {MPI_LXOR, DPC_OP_LXOR}, {MPI_BAND, DPC_OP_BAND}, {MPI_BOR, DPC_OP_BOR},
        {MPI_BXOR, DPC_OP_BXOR}, {MPI_MINLOC, DPC_OP_MINLOC}, {MPI_MAXLOC, DPC_OP_MAXLOC},
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (ops[i].mpi == op)
            return ops[i].dpc;
    if (op == dpc_g.avg_op && op != MPI_OP_NULL)
        return DPC_OP_SUM;     /* then the wrapper divides (dpc_avg_finish) */
    return -1;
}

int dpc_pack(const void *buf, int count, MPI_Datatype dt, const dpc_dtinfo_t *ti,
             MPI_Comm comm, char **bytes_p, char **tmp_p)
{
    *tmp_p = NULL;
    if (ti->contig || count == 0) {
        *bytes_p = (char *)buf + ti->true_lb;
        return MPI_SUCCESS;
    }
    size_t n = (size_t)ti->size * (size_t)count;
    char *t = malloc(n ? n : 1);
    int pos = 0;
    if (!t)
        return MPI_ERR_NO_MEM;
    int rc = PMPI_Pack(buf, count, dt, t, (int)n, &pos, comm);
    if (rc != MPI_SUCCESS) {
        free(t);
        return rc;
    }
    *tmp_p = *bytes_p = t;
    return MPI_SUCCESS;
}

int dpc_unpack(const char *bytes, void *buf, int count, MPI_Datatype dt, MPI_Comm comm)
{
    int pos = 0, size;
    PMPI_Type_size(dt, &size);
    return PMPI_Unpack(bytes, size * count, &pos, buf, count, dt, comm);
}
