/* Test harness: run one collective case on the simulated transport and check
 * it against an independently computed reference. */
#ifndef DPC_TEST_MATRIX_H
#define DPC_TEST_MATRIX_H

#include <stdbool.h>
#include "dpc_coll.h"
#include "dpc_sim.h"

typedef struct mx_case {
    const dpc_algo_t *algo;
    int p;
    size_t count;          /* total (allreduce, bcast) or per-rank block base */
    bool in_place;         /* bcast: root = p-1 instead of 0 */
    dpc_dtype_t dt;
    dpc_op_t op;           /* DPC_OP_USER_ORDERED (dt DPC_UINT64): a program's op
                            * that does not commute (affine maps composed),
                            * checked against the operands combined in rank order */
    uint64_t reorder_seed; /* also rerun with this seed and compare bitwise */
    size_t seg_bytes;
    size_t push_max;       /* dpc_coll_args_t.push_max (one-sided allgathers and all-to-alls write) */
    /* op DPC_OP_USER: a program's op through the schedule's callback, a sum
     * in dt (checked as SUM is); with order_only, inout = 3 in + inout on
     * uint32, which is not commutative: no reference, the result is only
     * compared across ranks (allreduce) and reorderings, which shows that
     * every rank combines each element's operands in one order */
    bool order_only;
    /* the ranks on this many nodes (tests/nodes.h: consecutive, or dealt
     * round_robin); 0: one node, except for an algorithm that needs
     * several (DPC_ALGO_NODES), which gets test_default_nodes(p) */
    int nodes;
    bool round_robin;
} mx_case_t;

typedef struct mx_fault {
    int kind;              /* 0 none, 1 fail send, 2 fail recv, 3 kill */
    int rank, k;
} mx_fault_t;

/* 0 on success; else a description in msg. */
int mx_run(const mx_case_t *c, char *msg, size_t len);
/* Fault run: checks that the run ends, that every rank either succeeds with
 * the right result or fails with a described error, that the faulted rank
 * fails when the fault triggers, and that no transfer is left behind. */
int mx_run_fault(const mx_case_t *c, const mx_fault_t *f, char *msg, size_t len);

/* Whether c's algorithm may run c's group (its size, node map, op and
 * type, one-sided reads allowed; no v-counts). */
bool mx_applies(const mx_case_t *c);

/* Every (dtype, op) pair MPI defines, for cycling through in the matrix. */
int mx_type_ops(dpc_dtype_t *dts, dpc_op_t *ops, int max);

extern int mx_runs;  /* runs made (each rerun counted) */

#endif
