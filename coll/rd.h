/*
 * The steps of a recursive-doubling allreduce (allreduce_recursive_doubling.c)
 * on buffers of the caller's choosing, for the algorithms built on it.
 */
#ifndef DPC_RD_H
#define DPC_RD_H

#include "dpc_coll.h"
#include "dpc_sched.h"

/* out[0..count) = the reduction of every rank's in[0..count) in rank
 * order (a's size, rank, dtype and op; in may equal out). Returns the step
 * after which out is final on this rank (DPC_STEP_NONE: nothing to do, or
 * an error the schedule keeps). */
dpc_step_id_t dpc_rd_allreduce_steps(const dpc_coll_args_t *a, dpc_sched_t *s, const char *in,
                                     char *out, size_t count);

#endif
