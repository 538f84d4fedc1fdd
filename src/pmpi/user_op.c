/*
 * A program's own reduction ops (MPI_Op_create) on libdpcoll.
 *
 * MPI gives no way to ask an op handle for its function, so the wrappers of
 * MPI_Op_create and MPI_Op_create_c keep it by handle (whether it commutes
 * the MPI library says: PMPI_Op_commutative), and MPI_Op_free forgets it before the MPI library may hand the
 * handle out again. An op made some other way (before libdpcoll was loaded,
 * or by mpi_f08, whose MPI_Op_create calls PMPI_Op_create itself) is not in
 * the table, and its calls go to MPI as before.
 *
 * Which calls run here (dpc_user_op_take; all ranks decide alike, from the
 * op and the datatype, which MPI requires to match):
 *  - commutative or not: a commutative op runs on any algorithm (each
 *    combines every element's operands in one order of its own, the same on
 *    every rank); one that does not commute (DPC_OP_USER_ORDERED) only on
 *    those that combine in rank order, as MPI defines its result
 *    (DPC_ALGO_RANK_ORDER: recursive doubling, Rabenseifner and direct for
 *    allreduce; direct, recursive doubling, and recursive halving at up to
 *    3 ranks for reduce-scatter), and never as a pipeline of owner chunks;
 *  - in every mode, but the function runs only in the program's threads,
 *    inside its MPI calls: a blocking call's thread; for a nonblocking or
 *    persistent call, its MPI_Wait, MPI_Test and the like. The progress
 *    thread moves such a call's data but leaves its reductions queued
 *    (run.c, op_held_here): there a function that takes a lock of the
 *    program's, an interpreter's for one, could deadlock against it;
 *  - host memory (device buffers are staged through the host first);
 *  - a contiguous datatype with no lower bound whose size is 1, 2, 4, 8 or
 *    16 bytes (a carrier element type of that size stands in for it in the
 *    schedule: its parts are whole elements of the program's type), as
 *    float16 made of MPI_BYTEs, int, float, double, a pair of doubles;
 *  - no MPI Fortran library loaded (dpc_g.f08: Fortran ops are created
 *    through paths we do not see).
 * The function gets the program's datatype handle and a count of its
 * elements, at most INT_MAX at a time.
 */
#include "config.h"
#include "shim.h"
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

typedef struct {
    MPI_Op op;
    MPI_User_function *fn;
    MPI_User_function_c *fn_c;
} entry_t;

static struct {
    pthread_mutex_t lock;
    entry_t *e;
    int n, cap;
} tab = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

static void remember(MPI_Op op, MPI_User_function *fn, MPI_User_function_c *fn_c)
{
    pthread_mutex_lock(&tab.lock);
    /* a handle seen before: its op was freed where we did not see it */
    for (int i = 0; i < tab.n; i++)
        if (tab.e[i].op == op) {
            tab.e[i] = (entry_t){op, fn, fn_c};
            pthread_mutex_unlock(&tab.lock);
            return;
        }
    if (tab.n == tab.cap) {
        int cap = tab.cap ? 2 * tab.cap : 16;
        entry_t *e = realloc(tab.e, sizeof(entry_t) * (size_t)cap);
        if (!e) {   /* not remembered: its calls go to MPI */
            pthread_mutex_unlock(&tab.lock);
            return;
        }
        tab.e = e;
        tab.cap = cap;
    }
    tab.e[tab.n++] = (entry_t){op, fn, fn_c};
    pthread_mutex_unlock(&tab.lock);
}

static void forget(MPI_Op op)
{
    pthread_mutex_lock(&tab.lock);
    for (int i = 0; i < tab.n; i++)
        if (tab.e[i].op == op) {
            tab.e[i] = tab.e[--tab.n];
            break;
        }
    if (tab.n == 0) {   /* (nothing kept past the program's last op) */
        free(tab.e);
        tab.e = NULL;
        tab.cap = 0;
    }
    pthread_mutex_unlock(&tab.lock);
}

static bool lookup(MPI_Op op, entry_t *out)
{
    bool found = false;
    pthread_mutex_lock(&tab.lock);
    for (int i = 0; i < tab.n && !found; i++)
        if (tab.e[i].op == op) {
            *out = tab.e[i];
            found = true;
        }
    pthread_mutex_unlock(&tab.lock);
    return found;
}

DPCOLL_API int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)
{
    int err = PMPI_Op_create(user_fn, commute, op);
    if (err == MPI_SUCCESS && user_fn)
        remember(*op, user_fn, NULL);
    return err;
}

DPCOLL_API int MPI_Op_create_c(MPI_User_function_c *user_fn, int commute, MPI_Op *op)
{
    int err = PMPI_Op_create_c(user_fn, commute, op);
    if (err == MPI_SUCCESS && user_fn)
        remember(*op, NULL, user_fn);
    return err;
}

DPCOLL_API int MPI_Op_free(MPI_Op *op)
{
    MPI_Op was = op ? *op : MPI_OP_NULL;
    int err = PMPI_Op_free(op);
    if (err == MPI_SUCCESS && was != MPI_OP_NULL)
        forget(was);
    return err;
}

/* The stand-in element type for a program's type of `size` bytes. */
static int carrier(MPI_Aint size)
{
    switch (size) {
    case 1: return DPC_UINT8;
    case 2: return DPC_UINT16;
    case 4: return DPC_UINT32;
    case 8: return DPC_UINT64;
    case 16: return DPC_COMPLEX_DOUBLE;
    default: return -1;
    }
}

bool dpc_user_op_take(MPI_Op op, MPI_Datatype dt, dpc_dtinfo_t *ti, dpc_user_op_t *u)
{
    entry_t e;
    int car = carrier(ti->size);
    if (dpc_g.f08 || !ti->contig || ti->true_lb != 0 ||
        ti->extent != ti->size || car < 0 || !lookup(op, &e))
        return false;
    *u = (dpc_user_op_t){.fn = e.fn, .fn_c = e.fn_c, .dt = dt, .size = (size_t)ti->size};
    ti->basic = car;
    ti->nbasic = 1;
    return true;
}

void dpc_user_op_apply(void *ctx, const void *in, void *inout, size_t count)
{
    dpc_user_op_t *u = ctx;
    char *y = inout;
    const char *x = in;
    MPI_Datatype dt = u->dt;
    while (count > 0) {
        size_t k = count > INT_MAX ? INT_MAX : count;
        if (u->fn_c) {
            MPI_Count len = (MPI_Count)k;
            u->fn_c((void *)x, y, &len, &dt);
        } else {
            int len = (int)k;
            u->fn((void *)x, y, &len, &dt);
        }
        x += k * u->size;
        y += k * u->size;
        count -= k;
    }
}
