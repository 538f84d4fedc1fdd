/* The cost of one selection (dpc_cost_select_model) of a v-call with unequal
 * counts at p ranks, built against the tree (not by make):
 *   cd _build && gcc -O2 -I. -I../include -I../src -I../coll ../docs/bench/s45/selection_cost.c \
 *       .libs/libdpccore.a .libs/libdpc_kernels.a -lm -lpthread -o /tmp/sel && /tmp/sel 1024
 * (session 45: shares.h; figures there) */
#include "config.h"
#include "dpc_cost.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv)
{
    int p = argc > 1 ? atoi(argv[1]) : 1024;
    size_t *cnt = malloc(sizeof(size_t) * p), *dsp = malloc(sizeof(size_t) * p);
    for (int i = 0; i < p; i++) cnt[i] = 100 + i, dsp[i] = i ? dsp[i-1] + cnt[i-1] : 0;
    dpc_cost_model_t m = dpc_cost_model_one_node();
    dpc_coll_t cs[2] = {DPC_ALLGATHERV, DPC_REDUCE_SCATTER};
    for (int k = 0; k < 2; k++) {
        dpc_coll_args_t a = {.coll = cs[k], .size = p, .dtype = k ? DPC_FLOAT : DPC_BYTE, .counts = cnt, .displs = k ? NULL : dsp, .one_sided = true};
        struct timespec t0, t1; int N = 2000; const dpc_algo_t *al = NULL;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < N; i++) al = dpc_cost_select_model(&a, &m);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("p=%d %s: %.2f us per selection (%s)\n", p, dpc_coll_name(cs[k]), ((t1.tv_sec-t0.tv_sec)*1e9+(t1.tv_nsec-t0.tv_nsec))/N/1e3, al->name);
    }
    return 0;
}
