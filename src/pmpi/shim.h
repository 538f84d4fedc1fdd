/*
 * The PMPI shim's shared state and helpers. Everything here runs inside an
 * MPI program between PMPI_Init and PMPI_Finalize.
 */
#ifndef DPC_SHIM_H
#define DPC_SHIM_H

#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>
#include "dpc_coll.h"
#include "dpc_config.h"
#include "dpc_cost.h"
#include "dpc_ucx.h"
#include "dpcoll.h"

/* Why a call went to PMPI_* (stats and logs). */
typedef enum {
    DPC_WHY_DISABLED, DPC_WHY_INTERCOMM, DPC_WHY_USER_OP, DPC_WHY_TYPE, DPC_WHY_COUNT
} dpc_why_t;

typedef struct dpc_coll_stats {
    unsigned long long ours, pmpi, bytes, errors;
    unsigned long long why[DPC_WHY_COUNT];
    unsigned long long *by_algo;   /* indexed like dpc_algos() */
} dpc_coll_stats_t;

typedef struct dpc_shim {
    bool active;            /* our path is on (same on every rank) */
    bool finalizing;
    dpc_config_t cfg;
    uint64_t *explained;    /* DPCOLL_EXPLAIN: signatures already shown */
    size_t nexplained;
    int world_rank, world_size, thread_level;
    bool locking;           /* MPI_THREAD_MULTIPLE: serialize our UCX use */
    bool oversubscribed;    /* more ranks on this node than cores for them */
    pthread_mutex_t lock;
    dpc_ucx_t *ux;
    int keyval;
    uint64_t ctx_used[(1 << DPC_UCX_CTX_BITS) / 64];
    dpc_coll_stats_t stats[DPC_COLL_COUNT];
    int nalgos;
    MPI_Op avg_op;          /* dpcoll_op_avg */
    MPI_Datatype bf16;      /* dpcoll_type_bfloat16 */
} dpc_shim_t;

extern dpc_shim_t dpc_g;

/* Per-communicator state, attached with an attribute keyval. */
typedef struct dpc_comm {
    int ctx;
    unsigned seq;
    int rank, size;
    dpc_transport_t *tp;
    dpc_scratch_pool_t pool;   /* scratch reused from call to call */
    dpc_sched_t *spare;        /* a finished schedule, reused by the next call */
    struct {                   /* last choice per collective (equal-count calls) */
        const dpc_algo_t *al, *forced;
        size_t count;
        int dtype, op, in_place, root;
    } last[DPC_COLL_COUNT];
} dpc_comm_t;

/* Gets (on first use: creates, collectively) the state of an intra-
 * communicator. Returns an MPI error code. */
int dpc_comm_get(MPI_Comm comm, const char *call, dpc_comm_t **c_p);
int dpc_comm_keyval_create(void);
void dpc_comm_release_builtin(void);

/* Datatype analysis: how a datatype lays out, and the predefined basic type
 * all its elements are made of (signature-based, so ranks with different
 * datatypes of the same signature agree). */
typedef struct dpc_dtinfo {
    MPI_Aint size;          /* bytes of data per element */
    MPI_Aint extent, true_lb;
    bool contig;            /* count elements are size*count dense bytes at true_lb */
    int basic;              /* dpc_dtype_t, or -1 if mixed or not one we reduce */
    MPI_Aint nbasic;        /* basic elements per element */
} dpc_dtinfo_t;
int dpc_dtinfo(MPI_Datatype dt, dpc_dtinfo_t *info);   /* MPI_SUCCESS or MPI_ERR_TYPE */
int dpc_op_map(MPI_Op op);                             /* dpc_op_t, or -1 for user ops */
/* The averaging step of dpcoll_op_avg on a result: count elements of dt
 * (contiguous or not) divided by the communicator size. */
int dpc_avg_finish(MPI_Comm comm, const char *call, void *buf, int count, MPI_Datatype dt);
void dpc_avg_init(void);
void dpc_avg_fini(void);

/* Contiguous bytes for count elements of dt at buf: the buffer itself when
 * the type is contiguous, else a packed copy (*tmp_p set, to be freed). */
int dpc_pack(const void *buf, int count, MPI_Datatype dt, const dpc_dtinfo_t *ti,
             MPI_Comm comm, char **bytes_p, char **tmp_p);
int dpc_unpack(const char *bytes, void *buf, int count, MPI_Datatype dt, MPI_Comm comm);

/* Errors: a message naming the call and the argument, an MPI error class,
 * raised through the communicator's error handler. Returns the code. */
int dpc_raise(MPI_Comm comm, int errclass, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Runs one collective on our algorithms and waits (bounded by the timeout).
 * Returns an MPI error code, already raised through the handler if not
 * MPI_SUCCESS. */
int dpc_run(MPI_Comm comm, dpc_comm_t *c, dpc_coll_args_t *a, const char *call,
            unsigned long long bytes);

/* Shared front matter of every wrapper: is our path on, is comm usable and
 * an intracommunicator. Returns 1 to go on with our path, 0 to use PMPI
 * (why set), or -1 with *err set to an already-raised error. */
int dpc_enter(MPI_Comm comm, dpc_coll_t coll, const char *call, int *err);
/* What dpc_enter found for the call in progress on this thread. */
extern __thread MPI_Comm dpc_tl_comm;
extern __thread dpc_comm_t *dpc_tl_state;
/* Size and rank of comm, without MPI calls when dpc_enter already knows it. */
void dpc_comm_shape(MPI_Comm comm, int *size, int *rank);
void dpc_note_pmpi(dpc_coll_t coll, dpc_why_t why);

void dpc_stats_print(void);

#endif
