#include "config.h"
#include "node_layout.h"
#include "coll_util.h"
#include <stdlib.h>

int node_layout_make(const dpc_coll_args_t *a, int r, node_layout_t *ly)
{
    ly->L = a->node_ranks;
    ly->N = a->nnodes;
    ly->node = a->node[r];
    ly->local = 0;
    for (int i = 0; i < r; i++)
        ly->local += a->node[i] == ly->node;
    ly->at = malloc(sizeof(int) * (size_t)a->size);
    ly->inter = malloc(sizeof(int) * (size_t)ly->N);
    int *seen = calloc((size_t)ly->N, sizeof(int));
    if (!ly->at || !ly->inter || !seen) {
        free(ly->at);
        free(ly->inter);
        free(seen);
        return -1;
    }
    for (int i = 0; i < a->size; i++) {
        int k = a->node[i], idx = seen[k]++;
        ly->at[k * ly->L + idx] = i;
        if (idx == ly->local)
            ly->inter[k] = i;
    }
    ly->intra = ly->at + ly->node * ly->L;
    free(seen);
    return 0;
}

void node_layout_free(node_layout_t *ly)
{
    free(ly->at);
    free(ly->inter);
}


int node_layout_blocks(const dpc_coll_args_t *a, const node_layout_t *ly, int concatenated,
                       size_t **off_p, size_t **len_p)
{
    int p = a->size;
    size_t *off, *len;
    size_t *o = malloc(sizeof(size_t) * (size_t)p), *l = malloc(sizeof(size_t) * (size_t)p);
    if (!o || !l || rank_blocks(a, concatenated, &off, &len)) {
        free(o);
        free(l);
        return -1;
    }
    for (int x = 0; x < p; x++) {
        o[x] = off[ly->at[x]];
        l[x] = len[ly->at[x]];
    }
    free(off);
    free(len);
    *off_p = o;
    *len_p = l;
    return 0;
}
