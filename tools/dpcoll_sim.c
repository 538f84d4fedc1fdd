/*
 * dpcoll_sim: run any registered algorithm on p simulated ranks (in one
 * process, no MPI) and show what it did: per-rank messages and bytes against
 * the algorithm's own formula, whether the result is right, and the time the
 * alpha-beta-gamma model predicts. With --trace (p <= 8) it prints every
 * rank's buffer after every step; reducing collectives then run in place
 * with rank r starting from 10^r everywhere, so the digits of a cell show
 * whose contributions it holds.
 */
#include "config.h"
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dpc_coll.h"
#include "dpc_config.h"
#include "dpc_cost.h"
#include "dpc_sim.h"
#include "part.h"
#include "dpcoll.h"

typedef struct tool {
    int p;
    size_t count;
    const dpc_algo_t *al;
    dpc_coll_args_t *args;
    int64_t **sbuf, **rbuf;
    size_t *rlen;             /* elements of rbuf per rank */
    size_t *counts, *displs, **scounts, **sdispls, **rcounts, **rdispls;
    int64_t **last;           /* trace: previous state */
    int step;
    int nodes;                /* -N: the ranks on this many nodes (0: one) */
    int *node;
} tool_t;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: dpcoll_sim COLLECTIVE ALGORITHM [options]\n"
        "       dpcoll_sim --list\n"
        "options:\n"
        "  -p, --ranks P        simulated ranks (default 4)\n"
        "  -n, --count N        elements (whole vector for allreduce/bcast, per rank otherwise;\n"
        "                       default: p for allreduce/bcast, 1 otherwise)\n"
        "  -r, --root R         broadcast root (default 0)\n"
        "  -i, --in-place       MPI_IN_PLACE semantics\n"
        "  -N, --nodes K        the ranks on K nodes, consecutive ranks together (the\n"
        "                       hierarchical allreduce needs 2 or more, as many ranks on each)\n"
        "  -s, --seg BYTES      pipeline segment size (default %u; the reducing rings': %u,\n"
        "                       as through 64 KiB mailboxes, up to 1 MiB allreduces and\n"
        "                        4 MiB reduce-scatters)\n"
        "  -a, --alpha SECONDS  latency per message for the prediction (default 10e-6)\n"
        "  -b, --bw BYTES/S     link bandwidth (default 10e9)\n"
        "  -g, --reduce-bw B/S  reduction bandwidth (default 5e9)\n"
        "  -R, --reorder SEED   deliver messages in a seeded random order\n"
        "  -t, --trace          print every rank's buffer after every step (p <= 8)\n"
        "Data are int64; reductions use sum.\n", DPC_DEFAULT_SEG_BYTES, DPC_DEFAULT_SHM_MAX);
}

static void list_algos(void)
{
    for (int c = 0; c < DPC_COLL_COUNT; c++) {
        printf("%-22s", dpc_coll_name(c));
        for (const dpc_algo_t *const *al = dpc_algos(); *al; al++)
            if ((*al)->coll == (dpc_coll_t)c)
                printf(" %s", (*al)->name);
        printf("\n");
    }
}

/* value rank r contributes at element i: 10^r for reductions (p <= 18) */
static int64_t contrib(const tool_t *t, int r)
{
    int64_t v = 1;
    if (t->p > 18)
        return 1;
    for (int k = 0; k < r; k++)
        v *= 10;
    return v;
}

static int64_t pattern(int from, int to, size_t i)
{
    return (int64_t)from * 1000000 + (int64_t)to * 1000 + (int64_t)(i % 1000);
}

static int setup(tool_t *t, bool in_place, int root, size_t seg)
{
    int p = t->p;
    dpc_coll_t coll = t->al->coll;
    bool v = coll == DPC_REDUCE_SCATTER || coll == DPC_ALLGATHERV || coll == DPC_ALLTOALLV;
    t->args = calloc((size_t)p, sizeof(*t->args));
    t->sbuf = calloc((size_t)p, sizeof(int64_t *));
    t->rbuf = calloc((size_t)p, sizeof(int64_t *));
    t->last = calloc((size_t)p, sizeof(int64_t *));
    t->rlen = calloc((size_t)p, sizeof(size_t));
    t->counts = calloc((size_t)p, sizeof(size_t));
    t->displs = calloc((size_t)p, sizeof(size_t));
    t->scounts = calloc((size_t)p, sizeof(size_t *));
    t->sdispls = calloc((size_t)p, sizeof(size_t *));
    t->rcounts = calloc((size_t)p, sizeof(size_t *));
    t->rdispls = calloc((size_t)p, sizeof(size_t *));
    t->node = calloc((size_t)p, sizeof(int));
    if (!t->args || !t->sbuf || !t->rbuf || !t->last || !t->rlen || !t->counts || !t->displs ||
        !t->scounts || !t->sdispls || !t->rcounts || !t->rdispls || !t->node)
        return -1;
    int node_ranks = 0;
    for (int r = 0; r < p && t->nodes >= 2; r++)
        t->node[r] = placed_node(r, p, t->nodes, 0);
    if (t->nodes >= 2 && p % t->nodes == 0)
        node_ranks = p / t->nodes;
    size_t total = 0;
    for (int i = 0; i < p; i++) {
        t->counts[i] = v ? t->count + (size_t)(i % 3) : t->count;
        t->displs[i] = total;
        total += t->counts[i];
    }
    for (int r = 0; r < p; r++) {
        dpc_coll_args_t *a = &t->args[r];
        *a = (dpc_coll_args_t){.coll = coll, .rank = r, .size = p, .count = t->count,
                               .dtype = DPC_INT64, .op = DPC_OP_SUM, .root = root,
                               .in_place = in_place && coll != DPC_BCAST, .seg_bytes = seg,
                               .one_sided = true, .push_min = DPC_PUSH_MIN,
                               .push_max = DPC_PUSH_MAX_ALL};
        if (t->nodes >= 2) {
            a->node = t->node;
            a->nnodes = t->nodes;
            a->node_ranks = node_ranks;
        }
        size_t sn = 0, rn = 0;
        switch (coll) {
        case DPC_ALLREDUCE: sn = rn = t->count; break;
        case DPC_REDUCE_SCATTER_BLOCK: sn = t->count * (size_t)p; rn = t->count; break;
        case DPC_REDUCE_SCATTER: sn = total; rn = t->counts[r]; a->counts = t->counts; break;
        case DPC_ALLGATHER: sn = t->count; rn = t->count * (size_t)p; break;
        case DPC_ALLGATHERV: sn = t->counts[r]; rn = total; a->counts = t->counts; a->displs = t->displs; break;
        case DPC_BCAST: rn = t->count; break;
        case DPC_ALLTOALL: sn = rn = t->count * (size_t)p; break;
        case DPC_ALLTOALLV:
            t->scounts[r] = calloc((size_t)p, sizeof(size_t));
            t->sdispls[r] = calloc((size_t)p, sizeof(size_t));
            t->rcounts[r] = calloc((size_t)p, sizeof(size_t));
            t->rdispls[r] = calloc((size_t)p, sizeof(size_t));
            if (!t->scounts[r] || !t->sdispls[r] || !t->rcounts[r] || !t->rdispls[r])
                return -1;
            for (int j = 0; j < p; j++) {
                /* symmetric, so MPI_IN_PLACE is legal too */
                t->scounts[r][j] = t->rcounts[r][j] = t->count + (size_t)((r + j) % 3);
                t->sdispls[r][j] = t->rdispls[r][j] = sn;
                sn += t->scounts[r][j];
            }
            rn = sn;
            a->scounts = in_place ? NULL : t->scounts[r];
            a->sdispls = in_place ? NULL : t->sdispls[r];
            a->counts = t->rcounts[r];
            a->displs = t->rdispls[r];
            break;
        default: break;
        }
        if (a->in_place && sn > rn)
            rn = sn;
        t->rlen[r] = rn;
        t->sbuf[r] = calloc(sn + 1, sizeof(int64_t));
        t->rbuf[r] = calloc(rn + 1, sizeof(int64_t));
        t->last[r] = calloc(rn + 1, sizeof(int64_t));
        if (!t->sbuf[r] || !t->rbuf[r] || !t->last[r])
            return -1;
        for (size_t i = 0; i < rn; i++)
            t->rbuf[r][i] = -1;       /* "not written yet" in the trace */
        int64_t *in = a->in_place ? t->rbuf[r] : t->sbuf[r];
        size_t inn = a->in_place ? rn : sn;
        if (dpc_coll_reduces(coll)) {
            for (size_t i = 0; i < inn; i++)
                in[i] = contrib(t, r);
        } else if (coll == DPC_BCAST) {
            if (r == root)
                for (size_t i = 0; i < rn; i++)
                    t->rbuf[r][i] = pattern(r, r, i);
        } else if (coll == DPC_ALLGATHER || coll == DPC_ALLGATHERV) {
            int64_t *own = a->in_place ? t->rbuf[r] + t->displs[r] : t->sbuf[r];
            for (size_t i = 0; i < t->counts[r]; i++)
                own[i] = pattern(r, r, i);
        } else {   /* alltoall(v): block for j */
            for (int j = 0; j < p; j++) {
                size_t off = coll == DPC_ALLTOALL ? (size_t)j * t->count : t->sdispls[r][j];
                size_t n = coll == DPC_ALLTOALL ? t->count : t->scounts[r][j];
                for (size_t i = 0; i < n; i++)
                    in[off + i] = pattern(r, j, i);
            }
        }
        a->sbuf = t->sbuf[r];
        a->rbuf = t->rbuf[r];
    }
    return 0;
}

/* Checks every rank's output; returns the number of wrong elements. */
static size_t verify(const tool_t *t, int root)
{
    size_t wrong = 0;
    int p = t->p;
    int64_t sum = 0;
    for (int q = 0; q < p; q++)
        sum += contrib(t, q);
    for (int r = 0; r < p; r++) {
        const int64_t *o = t->rbuf[r];
        switch (t->al->coll) {
        case DPC_ALLREDUCE: case DPC_REDUCE_SCATTER_BLOCK: case DPC_REDUCE_SCATTER: {
            size_t n = t->al->coll == DPC_ALLREDUCE ? t->count : t->counts[r];
            for (size_t i = 0; i < n; i++)
                wrong += o[i] != sum;
            break;
        }
        case DPC_ALLGATHER: case DPC_ALLGATHERV:
            for (int q = 0; q < p; q++)
                for (size_t i = 0; i < t->counts[q]; i++)
                    wrong += o[t->displs[q] + i] != pattern(q, q, i);
            break;
        case DPC_BCAST:
            for (size_t i = 0; i < t->count; i++)
                wrong += o[i] != pattern(root, root, i);
            break;
        case DPC_ALLTOALL: case DPC_ALLTOALLV:
            for (int q = 0; q < p; q++) {
                size_t off = t->al->coll == DPC_ALLTOALL ? (size_t)q * t->count : t->rdispls[r][q];
                size_t n = t->al->coll == DPC_ALLTOALL ? t->count : t->rcounts[r][q];
                for (size_t i = 0; i < n; i++)
                    wrong += o[off + i] != pattern(q, r, i);
            }
            break;
        default: break;
        }
    }
    return wrong;
}

static void print_state(tool_t *t, const char *title)
{
    printf("%s\n", title);
    for (int r = 0; r < t->p; r++) {
        printf("  rank %d |", r);
        for (size_t i = 0; i < t->rlen[r]; i++) {
            int64_t v = t->rbuf[r][i];
            bool changed = v != t->last[r][i];
            if (v < 0)
                printf(" %*s ", t->p, ".");
            else if (dpc_coll_reduces(t->al->coll))
                printf(" %0*" PRId64 "%c", t->p, v, changed ? '*' : ' ');
            else   /* data from rank (v / 10^6) */
                printf(" %*s%" PRId64 "%c", t->p - 1, "r", v / 1000000, changed ? '*' : ' ');
        }
        printf("\n");
        memcpy(t->last[r], t->rbuf[r], t->rlen[r] * sizeof(int64_t));
    }
}

static void observe(void *ctx, int round)
{
    tool_t *t = ctx;
    for (int r = 0; r < t->p; r++)
        if (memcmp(t->last[r], t->rbuf[r], t->rlen[r] * sizeof(int64_t))) {
            char title[80];
            snprintf(title, sizeof(title), "step %d (%s):", ++t->step,
                     round % 2 ? "messages delivered into the buffers"
                               : "local reductions and copies");
            print_state(t, title);
            return;
        }
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"ranks", 1, 0, 'p'}, {"count", 1, 0, 'n'}, {"root", 1, 0, 'r'}, {"in-place", 0, 0, 'i'},
        {"seg", 1, 0, 's'}, {"alpha", 1, 0, 'a'}, {"bw", 1, 0, 'b'}, {"reduce-bw", 1, 0, 'g'},
        {"reorder", 1, 0, 'R'}, {"trace", 0, 0, 't'}, {"list", 0, 0, 'l'}, {"help", 0, 0, 'h'},
        {"version", 0, 0, 'V'}, {"nodes", 1, 0, 'N'}, {0, 0, 0, 0}};
    tool_t t = {.p = 4};
    long count = -1;
    int root = 0, c;
    bool in_place = false, trace = false;
    size_t seg = 0;
    uint64_t seed = 0;
    dpc_cost_params_t cp = dpc_cost_defaults();
    while ((c = getopt_long(argc, argv, "p:n:r:is:a:b:g:R:tlhVN:", opts, NULL)) != -1) {
        switch (c) {
        case 'p': t.p = atoi(optarg); break;
        case 'n': count = atol(optarg); break;
        case 'r': root = atoi(optarg); break;
        case 'i': in_place = true; break;
        case 'N': t.nodes = atoi(optarg); break;
        case 's': seg = (size_t)atol(optarg); break;
        case 'a': cp.alpha = atof(optarg); break;
        case 'b': cp.beta = 1.0 / atof(optarg); break;
        case 'g': cp.gamma = 1.0 / atof(optarg); break;
        case 'R': seed = strtoull(optarg, NULL, 0); break;
        case 't': trace = true; break;
        case 'l': list_algos(); return 0;
        case 'V': printf("dpcoll_sim (libdpcoll) %s\n", dpcoll_version_string()); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (argc - optind != 2) {
        usage(stderr);
        return 2;
    }
    int coll = dpc_coll_from_name(argv[optind]);
    if (coll < 0) {
        fprintf(stderr, "dpcoll_sim: unknown collective '%s'; one of:\n", argv[optind]);
        list_algos();
        return 2;
    }
    t.al = dpc_algo_find(coll, argv[optind + 1]);
    if (!t.al) {
        fprintf(stderr, "dpcoll_sim: %s has no algorithm '%s'; it has:", argv[optind], argv[optind + 1]);
        for (const dpc_algo_t *const *al = dpc_algos(); *al; al++)
            if ((*al)->coll == (dpc_coll_t)coll)
                fprintf(stderr, " %s", (*al)->name);
        fprintf(stderr, "\n");
        return 2;
    }
    if (t.p < 1 || t.p > 4096 || root < 0 || root >= t.p) {
        fprintf(stderr, "dpcoll_sim: need 1 <= p <= 4096 and 0 <= root < p\n");
        return 2;
    }
    if (t.nodes < 0 || t.nodes > t.p) {
        fprintf(stderr, "dpcoll_sim: need 0 <= nodes <= p\n");
        return 2;
    }
    if (trace && t.p > 8) {
        fprintf(stderr, "dpcoll_sim: --trace needs p <= 8 (a cell shows one digit per rank)\n");
        return 2;
    }
    bool total = coll == DPC_ALLREDUCE || coll == DPC_BCAST;
    t.count = count >= 0 ? (size_t)count : (total ? (size_t)t.p : 1);
    if (trace && dpc_coll_reduces(coll))
        in_place = true;   /* so the buffer shows the partial sums as they form */
    if (setup(&t, in_place, root, seg)) {
        fprintf(stderr, "dpcoll_sim: out of memory\n");
        return 1;
    }
    if (!dpc_algo_applies(t.al, &t.args[0])) {
        fprintf(stderr, "dpcoll_sim: %s/%s cannot run these arguments\n", argv[optind], t.al->name);
        return 2;
    }
    printf("%s/%s: p=%d count=%zu int64%s%s%s\n", dpc_coll_name(coll), t.al->name, t.p, t.count,
           dpc_coll_reduces(coll) ? " sum" : "", in_place ? " in-place" : "",
           coll == DPC_BCAST ? (root ? " root>0" : " root=0") : "");
    if (trace) {
        if (dpc_coll_reduces(coll))
            printf("trace: rank r starts from 10^r; a cell's digit k set = it holds rank k's "
                   "contribution; * = changed in this step\n");
        else
            printf("trace: rK = data that came from rank K; . = not written yet; * = changed\n");
        print_state(&t, "start:");
    }
    dpc_sim_opts_t so = {.reorder_seed = seed};
    dpc_sim_t *sim = dpc_sim_create(t.p, &so);
    dpc_status_t *st = calloc((size_t)t.p, sizeof(*st));
    char **em = calloc((size_t)t.p, sizeof(char *));
    if (!sim || !st || !em)
        return 1;
    dpc_status_t rc = dpc_sim_run(sim, t.al, t.args, 0, st, em, trace ? observe : NULL, &t);
    int failed = rc != DPC_OK;
    if (rc != DPC_OK)
        printf("run did not finish: %s\n", dpc_status_str(rc));
    printf("\n%6s %12s %12s %16s %16s\n", "rank", "msgs", "formula", "bytes", "formula");
    uint64_t maxb = 0, maxm = 0;
    for (int r = 0; r < t.p; r++) {
        uint64_t m = dpc_sim_msgs_sent(sim, r), b = dpc_sim_bytes_sent(sim, r);
        uint64_t fm = t.al->msgs_sent(&t.args[r], r), fb = t.al->bytes_sent(&t.args[r], r);
        if (t.p <= 64 || r < 8 || r == t.p - 1)
            printf("%6d %12" PRIu64 " %12" PRIu64 " %16" PRIu64 " %16" PRIu64 "%s\n", r, m, fm, b, fb,
                   m == fm && b == fb ? "" : "   <-- differs");
        else if (r == 8)
            printf("%6s\n", "...");
        failed |= m != fm || b != fb;
        if (st[r] != DPC_OK) {
            printf("rank %d failed: %s\n", r, em[r] ? em[r] : dpc_status_str(st[r]));
            failed = 1;
        }
        if (b > maxb)
            maxb = b;
        if (m > maxm)
            maxm = m;
    }
    size_t wrong = verify(&t, root);
    failed |= wrong != 0;
    printf("\nresult: %s\n", wrong ? "WRONG" : "correct on every rank");
    if (wrong)
        printf("  %zu wrong elements\n", wrong);
    printf("traffic: %s the formula; busiest rank sent %" PRIu64 " bytes; most messages "
           "from one rank: %" PRIu64 "\n", failed && !wrong ? "does NOT match" : "matches", maxb, maxm);
    char net[96] = "";
    if (t.nodes >= 2)
        snprintf(net, sizeof(net), "; between nodes %.3g s, %.3g B/s", cp.alpha_net,
                 1 / cp.beta_net);
    printf("predicted time (alpha %.3g s, %.3g B/s links, %.3g B/s reduction%s): %.6g s\n",
           cp.alpha, 1 / cp.beta, 1 / cp.gamma, net, dpc_cost_formula(t.al, &t.args[0], &cp));
    dpc_sim_free_msgs(em, t.p);
    free(em);
    free(st);
    dpc_sim_destroy(sim);
    for (int r = 0; r < t.p; r++) {
        free(t.sbuf[r]); free(t.rbuf[r]); free(t.last[r]);
        free(t.scounts[r]); free(t.sdispls[r]); free(t.rcounts[r]); free(t.rdispls[r]);
    }
    free(t.sbuf); free(t.rbuf); free(t.last); free(t.rlen); free(t.counts); free(t.displs);
    free(t.scounts); free(t.sdispls); free(t.rcounts); free(t.rdispls); free(t.args);
    free(t.node);
    return failed ? 1 : 0;
}
