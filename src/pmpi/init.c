/*
 * MPI_Init, MPI_Init_thread, MPI_Finalize: bring libdpcoll up after MPI and
 * down before it. Every decision that changes what ranks do (on or off,
 * forced algorithms, segment size) is agreed across MPI_COMM_WORLD here, so
 * a rank whose environment differs cannot take another path than the rest.
 */
#include "dpc_hugepage.h"
#include "config.h"
#include "shim.h"
#include "stage.h"
#include "dpc_log.h"
#include "part.h"
#include "dpc_cma.h"
#include "dpc_shm.h"
#include "dpcoll.h"
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

dpc_shim_t dpc_g;

/* More ranks on this node than cores they may run on? Then a waiting rank
 * must give its core away at once instead of polling for a while. */
static bool node_oversubscribed(void)
{
    MPI_Comm node;
    int local = 1;
    if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        PMPI_Comm_size(node, &local);
        PMPI_Comm_free(&node);
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) < cpus)
        cpus = CPU_COUNT(&set);
    return cpus > 0 && local > cpus;
}

static void exchange_addresses(void)
{
    const void *addr;
    size_t len;
    dpc_ucx_address(dpc_g.ux, &addr, &len);
    int n = dpc_g.world_size, mylen = (int)len;
    int *lens = malloc(sizeof(int) * (size_t)n), *displs = malloc(sizeof(int) * (size_t)n);
    size_t *offs = malloc(sizeof(size_t) * (size_t)n), *slens = malloc(sizeof(size_t) * (size_t)n);
    char *all = NULL;
    int ok = lens && displs && offs && slens;
    if (ok)
        PMPI_Allgather(&mylen, 1, MPI_INT, lens, 1, MPI_INT, MPI_COMM_WORLD);
    size_t total = 0;
    for (int i = 0; ok && i < n; i++) {
        displs[i] = (int)total;
        offs[i] = total;
        slens[i] = (size_t)lens[i];
        total += (size_t)lens[i];
    }
    if (ok && (all = malloc(total ? total : 1)))
        PMPI_Allgatherv(addr, mylen, MPI_BYTE, all, lens, displs, MPI_BYTE, MPI_COMM_WORLD);
    if (!all || dpc_ucx_set_peers(dpc_g.ux, n, all, offs, slens) != DPC_OK) {
        /* out of memory at init: give up our path (agreed below) */
        dpc_ucx_destroy(dpc_g.ux);
        dpc_g.ux = NULL;
    }
    free(lens); free(displs); free(offs); free(slens); free(all);
}

/* Where the processes are, before our UCX context exists: which share
 * this one's node (mailboxes between them, UCX to the others), whether all
 * are on one node (then shared memory transports suffice), and whether
 * every process can read the memory of every other of its node
 * (cross-memory attach, probed by reading a word of each), which one-sided
 * algorithms need. Every rank knows every process's node from the same
 * gathered cards, so the two sides of a pair agree on its way. */
static int64_t *cma_pids;    /* per process: its pid where readable (this node), else 0 */
static int *node_slot;       /* per process: its index among this node's, -1 elsewhere */
static int node_procs;       /* this node's processes */
static int node_first;       /* the lowest world rank of this node */
static int single_node;

/* DPCOLL_TEST_NODES=k: rank r is taken to be on node placed_node(r, n, k,
 * cyclic) (hosts made different), as if the job ran on k machines. */
static void test_nodes(dpc_cma_card_t *cards, int n, int k, bool cyclic)
{
    if (k > n)
        k = n;
    for (int i = 0; k > 0 && i < n; i++) {
        int64_t node = placed_node(i, n, k, cyclic);
        cards[i].host ^= UINT64_C(0x9e3779b97f4a7c15) * (uint64_t)(1 + node);
    }
}

/* Every process's node, numbered by each node's lowest rank (the
 * communicators' node maps: comm.c), from the hosts sorted (a job of many
 * processes). Every rank numbers the same cards alike. */
static const dpc_cma_card_t *sort_cards;
static int by_host_then_rank(const void *x, const void *y)
{
    int i = *(const int *)x, k = *(const int *)y;
    uint64_t a = sort_cards[i].host, b = sort_cards[k].host;
    return a != b ? (a < b ? -1 : 1) : (i > k) - (i < k);
}

static void number_nodes(const dpc_cma_card_t *cards, int n)
{
    int *order = malloc(sizeof(int) * (size_t)n), *group = malloc(sizeof(int) * (size_t)n);
    dpc_g.node_of = malloc(sizeof(int) * (size_t)n);
    if (!order || !group || !dpc_g.node_of) {
        /* (the ranks must agree on the map: nothing sensible is left) */
        fprintf(stderr, "libdpcoll[%d] error: out of memory at MPI_Init\n", dpc_g.world_rank);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 0; i < n; i++)
        order[i] = i;
    sort_cards = cards;
    qsort(order, (size_t)n, sizeof(int), by_host_then_rank);
    int ngroups = 0;
    for (int j = 0; j < n; j++) {
        if (j > 0 && cards[order[j]].host != cards[order[j - 1]].host)
            ngroups++;
        group[order[j]] = ngroups;
    }
    ngroups++;
    /* (order reused as scratch: ngroups <= n) */
    dpc_g.nnodes = number_by_first_seen(group, n, ngroups, order, dpc_g.node_of);
    free(order);
    free(group);
}

static void locate_processes(void)
{
    int n = dpc_g.world_size, me = dpc_g.world_rank, ok = 0, all_ok = 0;
    dpc_cma_card_t mine, *cards = malloc(sizeof(*cards) * (size_t)n);
    node_slot = malloc(sizeof(int) * (size_t)n);
    dpc_cma_card(&mine);
    if (!cards || !node_slot) {
        /* the others wait in the gather below: nothing sensible is left */
        fprintf(stderr, "libdpcoll[%d] error: out of memory at MPI_Init\n", dpc_g.world_rank);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    PMPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, cards, (int)sizeof(mine), MPI_BYTE,
                   MPI_COMM_WORLD);
    test_nodes(cards, n, dpc_g.cfg.test_nodes, dpc_g.cfg.test_nodes_cyclic);
    single_node = 1;
    node_procs = 0;
    node_first = -1;
    for (int i = 0; i < n; i++) {
        single_node &= cards[i].host == cards[0].host;
        bool here = cards[i].host == cards[me].host;
        node_slot[i] = here ? node_procs++ : -1;
        if (here && node_first < 0)
            node_first = i;
    }
    dpc_g.nnodes = 1;
    if (!single_node)
        number_nodes(cards, n);
    ok = dpc_g.cfg.one_sided && dpc_cma_probe(cards, n, me);
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all_ok && (cma_pids = malloc(sizeof(int64_t) * (size_t)n)))
        for (int i = 0; i < n; i++)
            cma_pids[i] = node_slot[i] >= 0 ? cards[i].pid : 0;
    free(cards);
}

/* Mailboxes for small messages between the processes of each node: each
 * creates its segment, then maps those of its node, then removes its name
 * (the memory stays while mapped; nothing is left behind in /dev/shm).
 * All or none: a rank that fails says so and nobody uses them (nor does
 * anybody where a node has more processes than the mailboxes serve). */
_Static_assert(DPC_MAX_SHM_MAX <= DPC_SHM_MAX_MSG, "DPCOLL_SHM_MAX beyond what the rings carry");

static void open_mailboxes(void)
{
    int n = node_procs, me = node_slot[dpc_g.world_rank];
    int ok, all = 0;
    /* names unique to this job: rank 0's pid and a nonce (another job, in
     * another pid namespace sharing /dev/shm, may have the same pid) */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long job[2] = {(unsigned long long)getpid(),
                                 (unsigned long long)ts.tv_nsec ^ ((unsigned long long)ts.tv_sec << 30)};
    char prefix[80], err[256] = "";
    dpc_shm_t *shm = NULL;
    PMPI_Bcast(job, 2, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    /* (and the node's first rank: DPCOLL_TEST_NODES's nodes share /dev/shm) */
    snprintf(prefix, sizeof(prefix), "/dpcoll.%llu.%llx.%d", job[0], job[1], node_first);
    ok = n <= DPC_SHM_MAX_PROCS && dpc_shm_create(prefix, n, me, &shm, err, sizeof(err)) == DPC_OK;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) {
        ok = dpc_shm_attach(shm, err, sizeof(err)) == DPC_OK;
        PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    }
    dpc_shm_unlink(shm);     /* everyone has mapped it, or given up */
    if (all) {
        ok = dpc_ucx_set_shm(dpc_g.ux, shm, node_slot, dpc_g.cfg.shm_max) == DPC_OK;
        PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (ok)
            shm = NULL;      /* the transport's now */
        if (!all && ok) {
            /* another rank could not (out of memory): a message must go
             * the same way on both sides, and a transport keeps its
             * mailboxes for good, so this rank leaves our path, and the
             * check after this takes everyone off it */
            dpc_ucx_destroy(dpc_g.ux);
            dpc_g.ux = NULL;
        }
    }
    if (err[0])
        dpc_log(DPC_LOG_WARN, "%s; small messages go by UCX", err);
    dpc_shm_destroy(shm);
}

/* Rank 0's shared settings win; a rank that differs says so. */
static void agree_config(void)
{
    long long mine[DPC_CONFIG_SHARED_INTS], root[DPC_CONFIG_SHARED_INTS];
    dpc_config_pack_shared(&dpc_g.cfg, mine);
    memcpy(root, mine, sizeof(mine));
    PMPI_Bcast(root, DPC_CONFIG_SHARED_INTS, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (memcmp(root, mine, sizeof(mine))) {
        dpc_log(DPC_LOG_WARN, "DPCOLL_* settings differ from rank 0's; using rank 0's so that "
                              "all ranks take the same path");
        dpc_config_unpack_shared(&dpc_g.cfg, root);
    }
}

void dpc_init(int provided)
{
    char err[512];
    memset(&dpc_g, 0, sizeof(dpc_g));
    dpc_g.probe_comm = MPI_COMM_NULL;
    dpc_g.probe_req = MPI_REQUEST_NULL;
    PMPI_Comm_rank(MPI_COMM_WORLD, &dpc_g.world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &dpc_g.world_size);
    dpc_g.thread_level = provided;
    dpc_g.mt = provided == MPI_THREAD_MULTIPLE;
    pthread_mutex_init(&dpc_g.lock, NULL);
    while (dpc_algos()[dpc_g.nalgos])
        dpc_g.nalgos++;
    for (int c = 0; c < DPC_COLL_COUNT; c++)
        dpc_g.stats[c].by_algo = calloc((size_t)dpc_g.nalgos, sizeof(unsigned long long));
    int bad = dpc_config_read(&dpc_g.cfg, err, sizeof(err)) != DPC_OK;
    dpc_log_setup(dpc_g.cfg.log_level, dpc_g.world_rank);
    if (bad) {
        /* a typo in a forced algorithm must not silently run something else */
        fprintf(stderr, "libdpcoll[%d] error: %s\n", dpc_g.world_rank, err);
        fflush(stderr);
        usleep(200000);   /* let the launcher forward the line before the job dies */
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    agree_config();
    dpc_hugepage_enable(dpc_g.cfg.hugepages);
    dpc_shm_set_streaming(dpc_g.cfg.shm_stream);
    dpc_avg_init();
    dpc_g.oversubscribed = node_oversubscribed();
    int ok = 0;
    if (!dpc_g.cfg.disable)
        locate_processes();
    /* no tune file: the built-in constants of a node, and the defaults'
     * between nodes (the tune file is rank 0's for all) */
    if (!dpc_g.cfg.tune_file[0])
        dpc_g.cfg.cost = dpc_cost_model_one_node();
    if (!dpc_g.cfg.disable) {
        if (dpc_ucx_create(dpc_g.mt || dpc_g.cfg.progress_thread, single_node, &dpc_g.ux, err,
                           sizeof(err)) == DPC_OK)
            ok = 1;
        else
            dpc_log(DPC_LOG_WARN, "%s; collectives go to the MPI library", err);
    }
    /* all ranks on our path, or none */
    int all_ok = 0;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all_ok) {
        exchange_addresses();
        ok = dpc_g.ux != NULL;
        PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    }
    if (all_ok) {
        /* a rank that could not keep the pids has no one-sided transport:
         * then nobody uses one (the choice of algorithms must agree) */
        int have = cma_pids != NULL, all_have = 0;
        PMPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (all_have)
            dpc_ucx_set_cma(dpc_g.ux, dpc_g.world_size, cma_pids);
        if (dpc_g.cfg.shm)
            open_mailboxes();
        ok = dpc_g.ux != NULL;
        PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    }
    if (all_ok) {
        dpc_g.keyval = dpc_comm_keyval_create();
        dpc_g.ctx_used[0] = 1;   /* context 0 is MPI_COMM_WORLD's */
        /* and the last one is the mailboxes' doorbell (dpc_ucx.h) */
        dpc_g.ctx_used[(1 << DPC_UCX_CTX_BITS) / 64 - 1] |= UINT64_C(1) << 63;
        dpc_g.active = dpc_g.keyval != MPI_KEYVAL_INVALID && dpc_nbc_init() == MPI_SUCCESS &&
                       PMPI_Comm_dup(MPI_COMM_WORLD, &dpc_g.probe_comm) == MPI_SUCCESS &&
                       PMPI_Irecv(&dpc_g.probe_byte, 1, MPI_BYTE, dpc_g.world_rank, 0,
                                  dpc_g.probe_comm, &dpc_g.probe_req) == MPI_SUCCESS;
        if (dpc_g.active) {
            dpc_cuda_load();
            /* one rank with device buffers: every rank cuts large
             * allreduces into the same chunks (pipeline.c) */
            int mine = dpc_cuda != NULL, any = 0;
            PMPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            dpc_g.pipeline = any;
            dpc_g.ipc = any && single_node && dpc_g.cfg.ipc;
            /* (any rank: every rank must send these calls alike) */
            int f08[2] = {dpc_f08_loaded(), dpc_f08_past_us()}, any_f08[2] = {0, 0};
            PMPI_Allreduce(f08, any_f08, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            dpc_g.f08 = any_f08[0];
            dpc_g.f08_past_us = any_f08[1];
        }
    } else if (dpc_g.ux) {
        dpc_ucx_destroy(dpc_g.ux);
        dpc_g.ux = NULL;
    }
    free(cma_pids);
    cma_pids = NULL;
    free(node_slot);
    node_slot = NULL;
    if (dpc_g.active && dpc_log_enabled(DPC_LOG_INFO) && dpc_g.world_rank == 0) {
        char d[512];   /* (a job on several nodes says more) */
        dpc_ucx_describe(dpc_g.ux, d, sizeof(d));
        dpc_log(DPC_LOG_INFO, "libdpcoll %s active on %d ranks (%s)", dpcoll_version_string(),
                dpc_g.world_size, d);
    }
}

DPCOLL_API int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        int provided;
        PMPI_Query_thread(&provided);
        dpc_init(provided);
    }
    return rc;
}

DPCOLL_API int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        dpc_init(*provided);
    return rc;
}

void dpc_fini(void)
{
    if (dpc_g.active) {
        dpc_g.finalizing = true;
        if (dpc_g.cfg.stats)
            dpc_stats_print();
        /* nobody sends on our worker any more once everyone is here */
        dpc_nbc_fini();
        PMPI_Barrier(MPI_COMM_WORLD);
        dpc_comm_release_builtin();
        dpc_cuda_fini();
        dpc_ucx_destroy(dpc_g.ux);
        dpc_g.ux = NULL;
        PMPI_Comm_free_keyval(&dpc_g.keyval);
        if (dpc_g.probe_req != MPI_REQUEST_NULL) {
            PMPI_Cancel(&dpc_g.probe_req);
            PMPI_Wait(&dpc_g.probe_req, MPI_STATUS_IGNORE);
        }
        PMPI_Comm_free(&dpc_g.probe_comm);
        dpc_g.active = false;
    } else if (dpc_g.cfg.stats && dpc_g.world_size) {
        dpc_stats_print();
    }
    for (int c = 0; c < DPC_COLL_COUNT; c++) {
        free(dpc_g.stats[c].by_algo);
        dpc_g.stats[c].by_algo = NULL;
    }
    free(dpc_g.explained);
    dpc_g.explained = NULL;
    free(dpc_g.node_of);
    dpc_g.node_of = NULL;
    dpc_avg_fini();
}

DPCOLL_API int MPI_Finalize(void)
{
    dpc_fini();
    return PMPI_Finalize();
}

DPCOLL_API int dpcoll_set_algorithm(const char *collective, const char *algorithm)
{
    int c = collective ? dpc_coll_from_name(collective) : -1;
    if (c < 0)
        return MPI_ERR_ARG;
    if (!algorithm || !strcmp(algorithm, "auto")) {
        dpc_g.cfg.force[c] = NULL;
        return MPI_SUCCESS;
    }
    const dpc_algo_t *al = dpc_algo_find(c, algorithm);
    if (!al)
        return MPI_ERR_ARG;
    dpc_g.cfg.force[c] = al;
    return MPI_SUCCESS;
}

DPCOLL_API int dpcoll_set_push_max(size_t bytes)
{
    dpc_g.cfg.push_max = bytes;
    return MPI_SUCCESS;
}

DPCOLL_API int dpcoll_active(void)
{
    return dpc_g.active;
}

DPCOLL_API const char *dpcoll_algorithm_name(const char *collective, int i)
{
    int c = collective ? dpc_coll_from_name(collective) : -1;
    if (c < 0 || i < 0)
        return NULL;
    for (const dpc_algo_t *const *al = dpc_algos(); *al; al++)
        if ((*al)->coll == (dpc_coll_t)c && i-- == 0)
            return (*al)->name;
    return NULL;
}
