/*
 * Fortran programs. MPICH's Fortran bindings are of two kinds:
 *
 * - mpif.h and `use mpi` (mpi_allreduce_, mpi_wait_ ...): each calls the C
 *   function of its name (MPI_Allreduce, MPI_Wait ...), so our wrappers see
 *   all of it; dtype.c maps Fortran's types.
 * - `use mpi_f08`: the calls with a choice buffer (the collectives) call the
 *   C MPI_ function as well, but the others go to PMPI_ directly, past us:
 *   MPI_Init, MPI_Init_thread, MPI_Finalize, the communicator constructors,
 *   MPI_Start, MPI_Wait, MPI_Test and their -all, -any and -some forms.
 *
 * So for an mpi_f08 program:
 * - libdpcoll never started, and all its collectives went to the MPI
 *   library. Our own mpi_init_f08_, mpi_init_thread_f08_ and
 *   mpi_finalize_f08_ (found first: LD_PRELOAD, or -ldpcoll before the MPI
 *   library, puts us ahead of it) call the MPI library's and start or stop
 *   libdpcoll around them.
 * - Nonblocking collectives are MPICH generalized requests with poll and
 *   wait functions (nbc.c), which PMPI_Wait and PMPI_Test complete as they
 *   should.
 * - Persistent ones are not: PMPI_Start would start their library half, a
 *   receive that is never to be started (persist.c), and never ours. So
 *   libdpcoll has its own mpi_f08 MPI_Start, MPI_Wait ... as well
 *   (fortran_requests.c), which call ours. Where the MPI library's come
 *   first instead (libdpcoll linked after it), on any rank, persistent
 *   collectives go to the MPI library (DPCOLL_STATS: "persistent, mpi_f08
 *   past libdpcoll"): a program's MPI_Start could come through either.
 * - Communicators an mpi_f08 program makes are set up at their first
 *   collective rather than where they are made (comm_create.c).
 *
 * The forwarders pass on four pointer arguments whatever the binding
 * takes (gfortran passes an absent optional ierror as a null pointer);
 * unused ones are harmless in the C calling conventions of the ABIs MPICH
 * runs on.
 */
#define _GNU_SOURCE
#include "config.h"
#include "shim.h"
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*f08_fn_t)(void *, void *, void *, void *);

/* (the names MPICH's mpi_f08 module calls; no header declares them) */
DPCOLL_API void mpi_init_f08_(void *a0, void *a1, void *a2, void *a3);
DPCOLL_API void mpi_init_thread_f08_(void *a0, void *a1, void *a2, void *a3);
DPCOLL_API void mpi_finalize_f08_(void *a0, void *a1, void *a2, void *a3);

/* The MPI library's binding, after us in the search order (a program that
 * calls it was linked with one, so there is one). */
static f08_fn_t next_fn(const char *name)
{
    f08_fn_t f = (f08_fn_t)(uintptr_t)dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "libdpcoll: %s: no MPI library's %s after libdpcoll in the program's "
                        "libraries\n", name, name);
        abort();
    }
    return f;
}

/* The object that holds addr (its load address). */
static void *object_of(const void *addr)
{
    Dl_info info;
    return addr && dladdr(addr, &info) ? info.dli_fbase : NULL;
}

/* Whether name's first definition in the program's search order, where a
 * program's call of that name goes, is in another object than libdpcoll.
 * (Comparing with &name would not do: in a shared library that address is
 * itself the first definition.) */
static bool first_elsewhere(const char *name)
{
    void *first = dlsym(RTLD_DEFAULT, name);
    return first && object_of(first) != object_of((const void *)(uintptr_t)&next_fn);
}

/* (mpi_startall_f08_: one of MPICH's mpi_f08 bindings that libdpcoll has
 * too, so found ahead of us or after us) */
int dpc_f08_loaded(void)
{
    return first_elsewhere("mpi_startall_f08_") || dlsym(RTLD_NEXT, "mpi_startall_f08_");
}

int dpc_f08_past_us(void)
{
    return first_elsewhere("mpi_startall_f08_");
}

/* The MPI library's init (name), then ours, unless it failed or we
 * started already. */
static void init_then_start(const char *name, void *a0, void *a1, void *a2, void *a3)
{
    next_fn(name)(a0, a1, a2, a3);
    int up = 0, provided = MPI_THREAD_SINGLE;
    if (PMPI_Initialized(&up) == MPI_SUCCESS && up && !dpc_g.world_size &&
        PMPI_Query_thread(&provided) == MPI_SUCCESS)
        dpc_init(provided);
}

DPCOLL_API void mpi_init_f08_(void *a0, void *a1, void *a2, void *a3)
{
    init_then_start("mpi_init_f08_", a0, a1, a2, a3);
}

DPCOLL_API void mpi_init_thread_f08_(void *a0, void *a1, void *a2, void *a3)
{
    init_then_start("mpi_init_thread_f08_", a0, a1, a2, a3);
}

DPCOLL_API void mpi_finalize_f08_(void *a0, void *a1, void *a2, void *a3)
{
    f08_fn_t next = next_fn("mpi_finalize_f08_");
    if (dpc_g.world_size)
        dpc_fini();
    next(a0, a1, a2, a3);
}
