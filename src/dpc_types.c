#include "config.h"
#include "dpc_types.h"
#include "dpc_pairs.h"
#include <stdint.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtype_info[DPC_DTYPE_COUNT] = {
    [DPC_INT8] = {"int8", 1},       [DPC_UINT8] = {"uint8", 1},
    [DPC_INT16] = {"int16", 2},     [DPC_UINT16] = {"uint16", 2},
    [DPC_INT32] = {"int32", 4},     [DPC_UINT32] = {"uint32", 4},
    [DPC_INT64] = {"int64", 8},     [DPC_UINT64] = {"uint64", 8},
    [DPC_FLOAT16] = {"float16", 2}, [DPC_BFLOAT16] = {"bfloat16", 2},
    [DPC_FLOAT] = {"float", sizeof(float)},
    [DPC_DOUBLE] = {"double", sizeof(double)},
    [DPC_LONG_DOUBLE] = {"long_double", sizeof(long double)},
    [DPC_BOOL] = {"bool", sizeof(_Bool)},
    [DPC_BYTE] = {"byte", 1},
    [DPC_FLOAT_INT] = {"float_int", sizeof(dpc_float_int_t)},
    [DPC_DOUBLE_INT] = {"double_int", sizeof(dpc_double_int_t)},
    [DPC_LONG_INT] = {"long_int", sizeof(dpc_long_int_t)},
    [DPC_2INT] = {"2int", sizeof(dpc_2int_t)},
    [DPC_SHORT_INT] = {"short_int", sizeof(dpc_short_int_t)},
    [DPC_LONG_DOUBLE_INT] = {"long_double_int", sizeof(dpc_long_double_int_t)},
    [DPC_COMPLEX_FLOAT] = {"complex_float", sizeof(dpc_complex_float_t)},
    [DPC_COMPLEX_DOUBLE] = {"complex_double", sizeof(dpc_complex_double_t)},
};

static const char *const op_names[DPC_OP_COUNT] = {
    "sum", "prod", "min", "max", "land", "lor", "lxor",
    "band", "bor", "bxor", "minloc", "maxloc",
};

size_t dpc_dtype_size(dpc_dtype_t dt)
{
    return (unsigned)dt < DPC_DTYPE_COUNT ? dtype_info[dt].size : 0;
}

const char *dpc_dtype_name(dpc_dtype_t dt)
{
    return (unsigned)dt < DPC_DTYPE_COUNT ? dtype_info[dt].name : "?";
}

const char *dpc_op_name(dpc_op_t op)
{
    return (unsigned)op < DPC_OP_COUNT  ? op_names[op]
           : op == DPC_OP_USER         ? "user"
           : op == DPC_OP_USER_ORDERED ? "user (not commutative)"
                                       : "?";
}

int dpc_dtype_from_name(const char *name)
{
    for (int i = 0; i < DPC_DTYPE_COUNT; i++)
        if (strcmp(name, dtype_info[i].name) == 0)
            return i;
    return -1;
}

int dpc_op_from_name(const char *name)
{
    for (int i = 0; i < DPC_OP_COUNT; i++)
        if (strcmp(name, op_names[i]) == 0)
            return i;
    return -1;
}

static bool is_integer(dpc_dtype_t dt)
{
    return dt <= DPC_UINT64;
}

static bool is_float(dpc_dtype_t dt)
{
    return dt >= DPC_FLOAT16 && dt <= DPC_LONG_DOUBLE;
}

static bool is_pair(dpc_dtype_t dt)
{
    return dt >= DPC_FLOAT_INT && dt <= DPC_LONG_DOUBLE_INT;
}

static bool is_complex(dpc_dtype_t dt)
{
    return dt == DPC_COMPLEX_FLOAT || dt == DPC_COMPLEX_DOUBLE;
}

/* The MPI standard's table of which op applies to which type group:
 * arithmetic and min/max on integers and floats, arithmetic alone on
 * complex numbers; logical on integers and bool; bitwise on integers and
 * bytes; minloc/maxloc on the pair types. */
bool dpc_op_valid(dpc_op_t op, dpc_dtype_t dt)
{
    if ((unsigned)dt >= DPC_DTYPE_COUNT)
        return false;
    switch (op) {
    case DPC_OP_SUM: case DPC_OP_PROD:
        return is_integer(dt) || is_float(dt) || is_complex(dt);
    case DPC_OP_MIN: case DPC_OP_MAX:
        return is_integer(dt) || is_float(dt);
    case DPC_OP_LAND: case DPC_OP_LOR: case DPC_OP_LXOR:
        return is_integer(dt) || dt == DPC_BOOL;
    case DPC_OP_BAND: case DPC_OP_BOR: case DPC_OP_BXOR:
        return is_integer(dt) || dt == DPC_BYTE;
    case DPC_OP_MINLOC: case DPC_OP_MAXLOC:
        return is_pair(dt);
    default:
        return false;
    }
}

void dpc_dtype_value_bytes(dpc_dtype_t dt, size_t *off1, size_t *len1,
                           size_t *off2, size_t *len2)
{
    *off2 = *len2 = 0;
    *off1 = 0;
    switch (dt) {
    case DPC_LONG_DOUBLE:
        *len1 = sizeof(long double) > 10 ? 10 : sizeof(long double);
        return;
    case DPC_FLOAT_INT: case DPC_DOUBLE_INT: case DPC_LONG_INT:
    case DPC_2INT: case DPC_SHORT_INT:
    case DPC_LONG_DOUBLE_INT: {
        size_t vsz, ioff;
        switch (dt) {
        case DPC_FLOAT_INT: vsz = sizeof(float); ioff = offsetof(dpc_float_int_t, i); break;
        case DPC_DOUBLE_INT: vsz = sizeof(double); ioff = offsetof(dpc_double_int_t, i); break;
        case DPC_LONG_INT: vsz = sizeof(long); ioff = offsetof(dpc_long_int_t, i); break;
        case DPC_2INT: vsz = sizeof(int); ioff = offsetof(dpc_2int_t, i); break;
        case DPC_SHORT_INT: vsz = sizeof(short); ioff = offsetof(dpc_short_int_t, i); break;
        default: vsz = sizeof(long double) > 10 ? 10 : sizeof(long double);
            ioff = offsetof(dpc_long_double_int_t, i); break;
        }
        *len1 = vsz;
        *off2 = ioff;
        *len2 = sizeof(int);
        return;
    }
    default:
        *len1 = dpc_dtype_size(dt);
        return;
    }
}
