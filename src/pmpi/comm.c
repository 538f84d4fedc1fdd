/*
 * Communicator cache. State is attached to a communicator with an attribute
 * keyval on its first collective (or where the MPI library makes it:
 * comm_create.c) and released by MPI when the communicator is freed. Its
 * context id is agreed by all members (ctx.c).
 */
#include "config.h"
#include "shim.h"
#include "part.h"
#include <stdlib.h>
#include <string.h>

static void comm_state_free(dpc_comm_t *c)
{
    if (!c)
        return;
    dpc_ctx_release(c->ctx);
    dpc_sched_destroy(c->spare);
    for (int i = 0; i < DPC_REPLAY_SLOTS; i++) {
        dpc_sched_destroy(c->replay[i].s);
        free(c->replay[i].vec);
    }
    dpc_ucx_group_destroy(c->tp);
    for (int i = 0; i < DPC_COMM_POOLS; i++)
        dpc_scratch_pool_fini(&c->pool[i]);
    dpc_autotune_free(c);
    free(c->node);
    free(c);
}

/* The communicator's node map from the job's (world[i]: rank i's world
 * rank): every member computes the same from the same gathered cards. */
static dpc_status_t comm_nodes(dpc_comm_t *c, const int *world)
{
    if (dpc_g.nnodes < 2)
        return DPC_OK;
    int *node = malloc(sizeof(int) * (size_t)c->size);
    int *renum = malloc(sizeof(int) * (size_t)dpc_g.nnodes);
    int *count = calloc((size_t)c->size, sizeof(int));
    if (!node || !renum || !count) {
        free(node);
        free(renum);
        free(count);
        return DPC_ERR_NOMEM;
    }
    for (int i = 0; i < c->size; i++)
        node[i] = dpc_g.node_of[world[i]];
    int n = number_by_first_seen(node, c->size, dpc_g.nnodes, renum, node);
    for (int i = 0; i < c->size; i++)
        count[node[i]]++;
    int even = count[0];
    for (int k = 1; k < n; k++)
        even = count[k] == even ? even : 0;
    free(renum);
    free(count);
    if (n < 2) {
        free(node);      /* all on one node */
        return DPC_OK;
    }
    c->node = node;
    c->nnodes = n;
    c->node_ranks = even;
    return DPC_OK;
}

void dpc_comm_unref_locked(dpc_comm_t *c)
{
    if (--c->refs == 0)
        comm_state_free(c);
}

/* MPI frees the communicator; a collective still running on it keeps our
 * state alive until it ends. */
static int delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm; (void)keyval; (void)extra;
    /* the handle may come back for another communicator: forget it */
    __atomic_add_fetch(&dpc_g.comm_gen, 1, __ATOMIC_RELEASE);
    dpc_lock(true);
    dpc_comm_unref_locked(attr);
    dpc_unlock(true);
    return MPI_SUCCESS;
}

int dpc_comm_keyval_create(void)
{
    int kv = MPI_KEYVAL_INVALID;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &kv, NULL) != MPI_SUCCESS)
        return MPI_KEYVAL_INVALID;
    if (dpc_ctx_init() != MPI_SUCCESS) {
        PMPI_Comm_free_keyval(&kv);
        return MPI_KEYVAL_INVALID;
    }
    return kv;
}

/* COMM_WORLD and COMM_SELF are never freed by the program: drop their state
 * before the UCX worker goes away. */
void dpc_comm_release_builtin(void)
{
    PMPI_Comm_delete_attr(MPI_COMM_WORLD, dpc_g.keyval);
    PMPI_Comm_delete_attr(MPI_COMM_SELF, dpc_g.keyval);
    dpc_ctx_fini();
}

int dpc_comm_get(MPI_Comm comm, const char *call, dpc_comm_t **c_p)
{
    dpc_comm_t *c;
    int found = 0;
    if ((c = dpc_tl_known(comm)) != NULL) {     /* dpc_enter looked already */
        *c_p = c;
        return MPI_SUCCESS;
    }
    PMPI_Comm_get_attr(comm, dpc_g.keyval, &c, &found);
    if (found) {
        *c_p = c;
        return MPI_SUCCESS;
    }
    c = calloc(1, sizeof(*c));
    if (!c)
        return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
    c->refs = 1;      /* the attribute's */
    PMPI_Comm_rank(comm, &c->rank);
    PMPI_Comm_size(comm, &c->size);
    int rc = MPI_SUCCESS;
    if (comm == MPI_COMM_WORLD)
        c->ctx = 0;
    else if (c->size == 1)
        c->ctx = -1;    /* one member: no messages, no context needed */
    else
        rc = dpc_ctx_agree(comm, call, &c->ctx);
    if (rc != MPI_SUCCESS) {
        free(c);
        return rc;
    }
    /* translate our ranks to MPI_COMM_WORLD ranks = UCX peers */
    int *mine = malloc(sizeof(int) * (size_t)c->size), *world = malloc(sizeof(int) * (size_t)c->size);
    MPI_Group g, wg;
    if (!mine || !world) {
        free(mine);
        free(world);
        comm_state_free(c);
        return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
    }
    for (int i = 0; i < c->size; i++)
        mine[i] = i;
    PMPI_Comm_group(comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    PMPI_Group_translate_ranks(g, c->size, mine, wg, world);
    PMPI_Group_free(&g);
    PMPI_Group_free(&wg);
    int bad = 0;
    for (int i = 0; i < c->size; i++)
        bad |= world[i] == MPI_UNDEFINED;
    dpc_status_t st = bad ? DPC_ERR_UNSUPPORTED
                          : dpc_ucx_group_create(dpc_g.ux, c->rank, c->size, world, &c->tp);
    if (st == DPC_OK)
        st = comm_nodes(c, world);
    free(mine);
    free(world);
    if (st != DPC_OK) {
        comm_state_free(c);
        return dpc_raise(comm, MPI_ERR_INTERN, "%s: cannot set up this communicator (%s)", call,
                         bad ? "members outside MPI_COMM_WORLD (dynamic processes)" : dpc_status_str(st));
    }
    PMPI_Comm_set_attr(comm, dpc_g.keyval, c);
    *c_p = c;
    return MPI_SUCCESS;
}
