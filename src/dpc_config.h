/*
 * Configuration: read once from the environment into one struct (no
 * function-local statics, so tests can vary it). Every variable is
 * documented in man7 dpcoll, ENVIRONMENT.
 */
#ifndef DPC_CONFIG_H
#define DPC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include "dpc_coll.h"
#include "dpc_cost.h"
#include "dpc_status.h"

typedef struct dpc_config {
    bool disable;                          /* DPCOLL_DISABLE: everything to PMPI */
    int log_level;                         /* DPCOLL_LOG_LEVEL: 0 errors .. 3 debug */
    bool stats;                            /* DPCOLL_STATS: report at MPI_Finalize */
    double timeout_s;                      /* DPCOLL_TIMEOUT: 0 = wait forever */
    size_t seg_bytes;                      /* DPCOLL_SEG_BYTES: pipeline segment */
    const dpc_algo_t *force[DPC_COLL_COUNT]; /* DPCOLL_<COLL>_ALGORITHM; NULL = model */
    bool explain;                          /* DPCOLL_EXPLAIN: print each new choice */
    bool progress_thread;                  /* DPCOLL_PROGRESS_THREAD: advance nonblocking
                                              collectives in the background (default on) */
    bool progress_idle;                    /* DPCOLL_PROGRESS_THREAD=idle: that thread on
                                              idle CPU time only (SCHED_IDLE) */
    bool one_sided;                        /* DPCOLL_ONE_SIDED: algorithms that read peers'
                                              memory may be chosen (default on) */
    bool shm;                              /* DPCOLL_SHM: small messages between processes
                                              of one node through shared-memory mailboxes
                                              (default on) */
    size_t shm_max;                        /* DPCOLL_SHM_MAX: the largest such message */
    bool shm_stream;                       /* DPCOLL_SHM_STREAM: large records written into
                                              the mailboxes with streaming stores
                                              (dpc_shm.h; default off; a rank's own) */
    bool device_reduce;                    /* DPCOLL_DEVICE_REDUCE: large allreduces of
                                              device buffers reduce on the GPU (default on) */
    bool ipc;                              /* DPCOLL_IPC: blocking collectives whose every
                                              rank has device buffers, on one node, copy
                                              device to device through CUDA IPC (default on) */
    size_t ipc_min;                        /* DPCOLL_IPC_MIN: from this many bytes on */
    size_t push_max;                       /* DPCOLL_PUSH_MAX (dpc_coll_args_t.push_max);
                                              DPC_PUSH_MAX_ALL: no limit */
    bool hugepages;                        /* DPCOLL_HUGEPAGES: reused large host buffers
                                              made of 2 MiB pages (dpc_hugepage.h); a
                                              rank's own, not shared */
    unsigned autotune;                     /* DPCOLL_AUTOTUNE: calls per algorithm a large
                                              blocking call's signature is measured with
                                              before the fastest is kept (0: off, the model
                                              decides; at most DPC_AUTOTUNE_MAX_CALLS) */
    double autotune_period;                /* DPCOLL_AUTOTUNE_PERIOD: seconds' worth of a
                                              decided signature's calls before it is
                                              measured again (0: never; dpc_autotune.h) */
    int test_nodes;                        /* DPCOLL_TEST_NODES: for testing on one machine,
                                              the job taken as this many nodes of
                                              consecutive ranks (0: where they are) */
    bool test_nodes_cyclic;                /* ... "k:cyclic": the ranks dealt round-robin */
    dpc_cost_model_t cost;                 /* defaults, or DPCOLL_TUNE_FILE's */
    char tune_file[256];                   /* "" = built-in defaults */
} dpc_config_t;

#define DPC_DEFAULT_TIMEOUT_S 300.0
/* DPCOLL_TEST_NODES at most (a job's ranks beyond it share nodes) */
#define DPC_MAX_TEST_NODES (1 << 20)
/* Mailbox messages: the default largest, and the most the rings carry
 * (DPC_SHM_MAX_MSG in ucx_glue/dpc_shm.h, which checks it; jobs of more
 * than 16 processes carry less, dpc_shm_max_msg). */
#define DPC_DEFAULT_SHM_MAX 65536u
#define DPC_MAX_SHM_MAX 65536u
#define DPC_DEFAULT_IPC_MIN 65536u
/* DPCOLL_PUSH_MAX's default: no limit (a one-sided allgather or
 * all-to-all from DPC_PUSH_MIN up writes its blocks into its peers).
 * Why: on this project's 2-core VM (AMD EPYC family 26, 1 MiB of L2 per
 * core) the direct allgather pushing against pulling, alternating runs,
 * 2 ranks: 1.09-1.28x faster at 2-64 MiB with dpcoll_bench -t, 1.15-1.50x
 * without (docs/bench/s42/push_ab.txt); the all-to-all 1.13-1.42x at
 * 256 KiB-4 MiB (beyond, it reads: coll/alltoall_direct.c). An earlier VM of the kind (2 MiB of L2) measured reading
 * faster beyond its cache (4 MiB: 286-293 us against 330-346 pushing;
 * 8 MiB: 627-641 against 691-714), and the default was the L2 size then;
 * on such a machine set DPCOLL_PUSH_MAX to its L2 size. */
#define DPC_PUSH_MAX_ALL ((size_t)-1)
/* ... and from this many bytes (coll/allgather_direct.c has the figures) */
#define DPC_PUSH_MIN (256u << 10)
/* The largest output the direct all-to-all writes into its peers, whatever
 * push_max says: beyond it, on reused buffers made of huge pages
 * (dpc_hugepage.h), pushing measured no faster, 0.72-1.09x the pull's
 * speed at 8-64 MiB in four runs of five (docs/bench/s42), where up to
 * 4 MiB it was 1.13-1.31x in four of five. */
#define DPC_ALLTOALL_PUSH_UP_TO ((size_t)4 << 20)

void dpc_config_defaults(dpc_config_t *cfg);
/* Reads the environment; on a bad value returns DPC_ERR_ARG with a message
 * (naming the variable and, for algorithms, the valid names) in err. */
dpc_status_t dpc_config_read(dpc_config_t *cfg, char *err, size_t errlen);
/* The environment variable that forces an algorithm for c. */
void dpc_config_algo_var(dpc_coll_t c, char *buf, size_t len);

/* The settings that change what every rank does (so they must agree across
 * ranks), as integers; log level and stats are local and not included. */
#define DPC_CONFIG_RULE_INTS 7   /* a measured choice: collective, ranks, lo, hi, algorithm,
                                    calls, nodes */
#define DPC_CONFIG_SHARED_INTS (15 + DPC_COLL_COUNT + DPC_COST_SETS * (1 + DPC_COST_NFIELDS) + \
                                DPC_COST_RULES * DPC_CONFIG_RULE_INTS)

/* Tune files: "key = value" lines; '#' starts a comment. Per set of
 * constants (dpc_cost_fields: alpha, beta, gamma, alpha_rndv, alpha_get,
 * alpha_call, beta_concurrent, beta_reread, and between nodes alpha_net,
 * alpha_rndv_net, beta_net), KEY for calls below large_bytes, KEY_large from there up,
 * KEY_huge from huge_bytes up, KEY_memory from memory_bytes up (a threshold
 * left out or 0: no such set). A key left out of a set keeps the previous
 * set's value (the small set's: the default); alpha_rndv, alpha_get and
 * alpha_call (and beta_concurrent, beta_reread) named in no set at all (an older file)
 * are DPC_COST_RNDV_ALPHAS, DPC_COST_GET_ALPHAS and 0 alphas of each set
 * (0); the constants between nodes named in no set are the defaults'.
 * "choose = COLLECTIVE RANKS[/NODES] FROM_BYTES TO_BYTES ALGORITHM [CALLS]"
 * lines are measured choices (dpc_cost_rule_t), in the file's order; NODES
 * (left out: 1, one node) the nodes the communicator spans; CALLS is
 * blocking, nonblocking (and persistent) or any (left out: any). */
dpc_status_t dpc_tune_read(const char *path, dpc_cost_model_t *m, char *err, size_t errlen);
dpc_status_t dpc_tune_write(const char *path, const dpc_cost_model_t *m, const char *comment);
void dpc_config_pack_shared(const dpc_config_t *cfg, long long *v);
void dpc_config_unpack_shared(dpc_config_t *cfg, const long long *v);

#endif
