/* What the owner algorithms share (coll/allreduce_owner.c,
 * coll/reduce_scatter_owner.c). */
#ifndef DPC_OWNER_H
#define DPC_OWNER_H

#include "dpc_coll.h"

/* The owner's reduction: dst = x[0] op x[1] op ... op x[p-1] (n elements of
 * a's type and op), x[k] ready after ready[k]; on the device when dev
 * (DEVICE_REDUCE steps), else on the host. Returns the last step. */
dpc_step_id_t dpc_owner_reduce_chain(dpc_sched_t *s, bool dev, char *dst, const char *const *x,
                                     const dpc_step_id_t *ready, int p, size_t n,
                                     const dpc_coll_args_t *a);

/* Elements of a block of `count` that fall in the chunk [e0, e0+n) (a
 * reduce-scatter's chunk k is that slice of every block, as far as each
 * goes). */
static inline size_t dpc_in_chunk(size_t count, size_t e0, size_t n)
{
    return count > e0 ? (count - e0 < n ? count - e0 : n) : 0;
}

#endif
