/* Large-count forms (see lcount.h): the shared conversions. */
#include "config.h"
#include "lcount.h"
#include <stdlib.h>

DPC_TLS const MPI_Count *dpc_tl_lc;
DPC_TLS void *dpc_tl_adopt;

static long long value(const dpc_lc_array_t *a, int i)
{
    return a->counts ? (long long)a->counts[i] : (long long)a->displs[i];
}

int dpc_lc_convert(int n, const dpc_lc_array_t in[4], int *out[4], void **mem)
{
    size_t arrays = 0;
    *mem = NULL;
    for (int k = 0; k < 4; k++) {
        out[k] = NULL;
        if (!in[k].counts && !in[k].displs)
            continue;
        arrays++;
        for (int i = 0; i < n; i++)
            if (!dpc_lc_fits(value(&in[k], i)))
                return 1 + k;
    }
    if (!arrays)
        return 0;
    int *v = malloc(sizeof(int) * arrays * (size_t)(n > 0 ? n : 1));
    if (!v)
        return -1;
    *mem = v;
    for (int k = 0; k < 4; k++) {
        if (!in[k].counts && !in[k].displs)
            continue;
        out[k] = v;
        for (int i = 0; i < n; i++)
            v[i] = (int)value(&in[k], i);
        v += n;
    }
    return 0;
}

int dpc_lc_enter(MPI_Comm comm, dpc_coll_t coll, const char *call, dpc_mode_t mode,
                 const dpc_lc_array_t in[4], const bool local[4], const char *const names[4],
                 int *ic[4], void **mem, int *err)
{
    int size, rank;
    *mem = NULL;
    switch (dpc_enter(comm, coll, call, mode, err)) {
    case -1: return -1;
    case 0: return 0;
    }
    dpc_comm_shape(comm, &size, &rank);
    int cv = dpc_lc_convert(size, in, ic, mem);
    if (cv < 0) {
        *err = dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
        return -1;
    }
    if (cv > 0 && local[cv - 1]) {
        *err = dpc_lc_refuse(comm, call, names[cv - 1]);
        return -1;
    }
    if (cv > 0) {
        dpc_lc_note_pmpi(coll);
        return 0;
    }
    return 1;
}

int dpc_lc_refuse(MPI_Comm comm, const char *call, const char *arg)
{
    return dpc_raise(comm, MPI_ERR_COUNT, "%s: %s holds a value beyond 2^31-1, which each rank "
                     "passes for itself, so the ranks could not agree to hand the call to the MPI "
                     "library; libdpcoll takes such values only within an int (DPCOLL_DISABLE=1 "
                     "runs every call on the MPI library)", call, arg);
}

void dpc_lc_note_pmpi(dpc_coll_t coll)
{
    if (!dpc_g.finalizing && dpc_g.world_size)
        dpc_note_pmpi(coll, dpc_g.active ? DPC_WHY_LARGE_COUNT : DPC_WHY_DISABLED);
}
