/*
 * dpcoll_info: what this libdpcoll is and how it is set up here: version,
 * build configuration (MPI, UCX version and transports, CUDA), the
 * algorithms of each collective, and the settings the environment selects.
 * Runs without mpiexec (no MPI_Init).
 */
#include "config.h"
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <uct/api/uct.h>
#include "dpc_config.h"
#include "dpc_cost.h"
#include "dpc_ucx.h"
#include "dpcoll.h"

static void transports(void)
{
    uct_component_h *comps;
    unsigned n;
    printf("  UCX components:  ");
    if (uct_query_components(&comps, &n) != UCS_OK) {
        printf("(query failed)\n");
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        uct_component_attr_t a = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME};
        if (uct_component_query(comps[i], &a) == UCS_OK)
            printf("%s%s", i ? ", " : "", a.name);
    }
    printf("\n");
    uct_release_component_list(comps);
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("usage: dpcoll_info\nPrints libdpcoll's version, build configuration, algorithms "
               "and the settings in effect.\n");
        return 0;
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING], err[512], d[256];
    int len;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = 0;
    printf("libdpcoll %s\n\nbuild:\n", dpcoll_version_string());
    printf("  MPI:             %s\n", lib);
    dpc_ucx_t *ux = NULL;
    if (dpc_ucx_create(0, 0, &ux, err, sizeof(err)) == DPC_OK) {
        dpc_ucx_describe(ux, d, sizeof(d));
        printf("  UCX:             %s\n", d);
        dpc_ucx_destroy(ux);
    } else {
        printf("  UCX:             %s\n", err);
    }
    transports();
#ifdef DPC_HAVE_CUDA
    printf("  CUDA:            built with CUDA: libdpcoll_cuda.so is loaded at MPI_Init when a GPU "
           "and driver are present (DPCOLL_LOG_LEVEL=2 says which); calls whose "
           "every rank has its buffers on a GPU of this node (reductions: GPUs with peer access) go "
           "device to device through CUDA IPC (blocking from DPCOLL_IPC_MIN bytes, nonblocking and "
           "persistent from 2 MiB; DPCOLL_IPC=0: never); other device buffers "
           "are staged through pinned host memory (allreduces and reduce-scatters of 2 MiB "
           "and more in a pipeline of "
           "1 MiB chunks, reduced on the GPU unless DPCOLL_DEVICE_REDUCE=0)\n");
#else
    printf("  CUDA:            no\n");
#endif
    printf("  Fortran:         use mpi and mpif.h programs come through MPICH's Fortran binding "
           "to the C calls; use mpi_f08 ones too, libdpcoll starting in their MPI_Init "
           "(mpi_init_f08_) and their persistent collectives starting and ending in its own "
           "mpi_f08 MPI_Start, MPI_Wait, MPI_Test... (which MPICH's call PMPI_ directly); "
           "a program's ops (MPI_Op_create) go to MPI while MPICH's Fortran library is "
           "loaded\n");
    printf("\nalgorithms (selected per call by the alpha-beta-gamma model unless forced; "
           "direct: one-sided, for jobs on one node):\n");
    for (int c = 0; c < DPC_COLL_COUNT; c++) {
        printf("  %-22s", dpc_coll_name(c));
        for (const dpc_algo_t *const *al = dpc_algos(); *al; al++)
            if ((*al)->coll == (dpc_coll_t)c)
                printf(" %s", (*al)->name);
        printf("\n");
    }
    dpc_config_t cfg;
    int bad = dpc_config_read(&cfg, err, sizeof(err)) != DPC_OK;
    printf("\nsettings in effect (environment):\n");
    if (bad) {
        printf("  ERROR: %s\n", err);
        return 1;
    }
    printf("  DPCOLL_DISABLE                         %d%s\n", cfg.disable, cfg.disable ? " (every collective goes to PMPI)" : "");
    printf("  DPCOLL_TIMEOUT                         %g s%s\n", cfg.timeout_s, cfg.timeout_s == 0 ? " (none)" : "");
    printf("  DPCOLL_STATS                           %d\n", cfg.stats);
    printf("  DPCOLL_LOG_LEVEL                       %d\n", cfg.log_level);
    if (cfg.seg_bytes)
        printf("  DPCOLL_SEG_BYTES                       %zu\n", cfg.seg_bytes);
    else
        printf("  DPCOLL_SEG_BYTES                       unset (%u; the rings of blocking "
               "allreduces up to 1 MiB and reduce-scatters up to 4 MiB: the mailboxes' "
               "largest message where they carry %u bytes)\n",
               DPC_DEFAULT_SEG_BYTES, DPC_DEFAULT_SHM_MAX);
    for (int c = 0; c < DPC_COLL_COUNT; c++) {
        char var[64];
        dpc_config_algo_var(c, var, sizeof(var));
        printf("  %-38s %s\n", var, cfg.force[c] ? cfg.force[c]->name : "auto");
    }
    printf("  DPCOLL_EXPLAIN                         %d\n", cfg.explain);
    printf("  DPCOLL_AUTOTUNE                        %u%s\n", cfg.autotune,
           cfg.autotune ? " measured calls per candidate algorithm" : " (off: the model decides)");
    printf("  DPCOLL_AUTOTUNE_PERIOD                 %g%s\n", cfg.autotune_period,
           cfg.autotune_period > 0 ? " s of a decided signature's calls before measuring again"
                                   : " (measured once)");
    printf("  DPCOLL_PROGRESS_THREAD                 %s\n",
           cfg.progress_idle ? "idle" : cfg.progress_thread ? "1" : "0");
    printf("  DPCOLL_ONE_SIDED                       %d\n", cfg.one_sided);
    printf("  DPCOLL_DEVICE_REDUCE                   %d\n", cfg.device_reduce);
    printf("  DPCOLL_HUGEPAGES                       %d%s\n", cfg.hugepages,
           cfg.hugepages ? " (reused host buffers of whole 2 MiB pages made huge on their "
                           "second use)" : "");
    printf("  DPCOLL_IPC                             %d\n", cfg.ipc);
    printf("  DPCOLL_IPC_MIN                         %zu\n", cfg.ipc_min);
    printf("  DPCOLL_SHM                             %d\n", cfg.shm);
    printf("  DPCOLL_SHM_MAX                         %zu\n", cfg.shm_max);
    printf("  DPCOLL_SHM_STREAM                      %d%s\n", cfg.shm_stream,
           cfg.shm_stream ? " (records from 16 KiB written with streaming stores)" : "");
    printf("  DPCOLL_TEST_NODES                      %d%s%s\n", cfg.test_nodes,
           cfg.test_nodes_cyclic ? ":cyclic" : "",
           cfg.test_nodes ? " (testing: the job taken as that many nodes)"
                          : " (the nodes where the processes are)");
    if (cfg.push_max == DPC_PUSH_MAX_ALL)
        printf("  DPCOLL_PUSH_MAX                        (no limit: one-sided allgathers from "
               "%u bytes, and all-to-alls up to %zu, write into their peers)\n", DPC_PUSH_MIN,
               (size_t)DPC_ALLTOALL_PUSH_UP_TO);
    else
        printf("  DPCOLL_PUSH_MAX                        %zu\n", cfg.push_max);
    printf("  DPCOLL_TUNE_FILE                       %s\n", cfg.tune_file[0] ? cfg.tune_file : "(none)");
    /* without a tune file, the built-in one (what MPI_Init takes); the
     * constants between nodes (alpha_net ...) price communicators across
     * nodes */
    dpc_cost_model_t m = cfg.tune_file[0] ? cfg.cost : dpc_cost_model_one_node();
    printf("  cost model (%s; *_net: messages between nodes):\n",
           cfg.tune_file[0] ? "from the tune file" : "built in");
    dpc_cost_model_print(stdout, &m, "    ");
    return 0;
}
