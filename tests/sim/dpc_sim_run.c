/* Driver: one collective on every simulated rank, in rounds. A round gives
 * every live rank one dpc_sched_test() (in a shuffled order when reordering)
 * and then delivers messages in flight. */
#include "config.h"
#include "dpc_sim.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dpc_sim_free_msgs(char **errmsg, int p)
{
    if (!errmsg)
        return;
    for (int i = 0; i < p; i++)
        free(errmsg[i]);
}

dpc_status_t dpc_sim_run(dpc_sim_t *sim, const dpc_algo_t *algo, const dpc_coll_args_t *args,
                         uint64_t timeout_ns, dpc_status_t *status, char **errmsg,
                         dpc_sim_observer_t observer, void *ctx)
{
    int p = dpc_sim_size(sim);
    dpc_status_t ret = DPC_OK;
    dpc_sched_t **sc = calloc((size_t)p, sizeof(*sc));
    int *order = malloc(sizeof(int) * (size_t)p);
    if (!sc || !order) {
        free(sc);
        free(order);
        return DPC_ERR_NOMEM;
    }
    if (errmsg)
        memset(errmsg, 0, sizeof(char *) * (size_t)p);
    int running = 0;
    for (int r = 0; r < p; r++) {
        order[r] = r;
        status[r] = DPC_INPROGRESS;
        if (dpc_sim_dead(sim, r)) {
            status[r] = DPC_ERR_PEER_LOST;
            continue;
        }
        dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, r),
                                  .tag_base = UINT64_C(0x5eed) << DPC_STEP_TAG_BITS,
                                  .timeout_ns = timeout_ns, .mem = DPC_MEM_HOST};
        prm.dev_ops = dpc_sim_device(sim, r, &prm.dev_ctx);
        prm.user_reduce = dpc_sim_user_reduce(sim, &prm.user_ctx);
        /* as the library runs them: a nonblocking call's defers its local
         * work, a blocking call's polls its receives */
        if (dpc_sim_defers_local(sim)) {
            prm.defer_local = true;
            prm.local_slice_bytes = 4096;
            prm.remote_slice_bytes = 4096;
        } else {
            prm.poll_recvs = true;
        }
        dpc_status_t st = dpc_sched_create(&prm, &sc[r]);
        if (st == DPC_OK)
            st = algo->build(&args[r], sc[r]);
        if (st == DPC_OK)
            st = dpc_sched_start(sc[r]);
        if (st != DPC_OK) {
            status[r] = st;
            continue;
        }
        running++;
    }
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (int round = 0; running > 0; round++) {
        uint64_t ev0 = dpc_sim_events(sim);
        int changed = 0;
        /* a deterministic shuffle of the order ranks are progressed in */
        for (int i = p - 1; i > 0; i--) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            int j = (int)((seed >> 33) % (uint64_t)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < p; i++) {
            int r = order[i];
            if (status[r] != DPC_INPROGRESS)
                continue;
            status[r] = dpc_sched_test(sc[r]);
            if (status[r] != DPC_INPROGRESS) {
                running--;
                changed++;
            } else if (dpc_sched_has_local_work(sc[r])) {
                changed++;   /* (slices of local work left: the next test goes on) */
            }
        }
        if (observer)
            observer(ctx, 2 * round);        /* after local work */
        dpc_sim_deliver(sim);
        if (observer)
            observer(ctx, 2 * round + 1);    /* after deliveries */
        if (running > 0 && !changed && dpc_sim_events(sim) == ev0) {
            /* nothing can happen any more: let time pass */
            if (!timeout_ns) {
                ret = DPC_ERR_STATE;
                break;
            }
            dpc_sim_advance(sim, timeout_ns + 1);
        }
    }
    for (int r = 0; r < p; r++) {
        if (errmsg && status[r] != DPC_OK) {
            errmsg[r] = malloc(256);
            if (errmsg[r]) {
                if (sc[r])
                    dpc_sched_describe(sc[r], errmsg[r], 256);
                else
                    snprintf(errmsg[r], 256, "%s", dpc_status_str(status[r]));
            }
        }
        dpc_sched_destroy(sc[r]);
    }
    free(sc);
    free(order);
    return ret;
}
