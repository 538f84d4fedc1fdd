/* Around timed calls, shared by dpcoll_bench and dpcoll_tune: the shapes of
 * the calls' buffers, the warm-up before timing, and the untimed touching of
 * a call's buffers between calls that puts their cache lines where a
 * program would (bench -t, the tune). */
#ifndef DPC_TOOLS_WARMUP_H
#define DPC_TOOLS_WARMUP_H

#include <stddef.h>
#include "dpc_coll.h"

/* The timed calls' buffers, for the five collectives the tools time, in
 * elements. A size asked for is the whole buffer (nccl-tests' size): a
 * reduce-scatter's input, an allgather's output and an all-to-all's are a
 * block per rank, so the call's count is that size over the ranks (at
 * least 1); allreduce and bcast take the whole vector. */
static inline int timed_blocks_in(dpc_coll_t c)
{
    return c == DPC_REDUCE_SCATTER_BLOCK || c == DPC_ALLTOALL;
}
static inline int timed_blocks_out(dpc_coll_t c)
{
    return c == DPC_ALLGATHER || c == DPC_ALLTOALL;
}
static inline size_t timed_count(dpc_coll_t c, size_t elems, int p)
{
    if (elems == 0)
        elems = 1;
    if (!timed_blocks_in(c) && !timed_blocks_out(c))
        return elems;
    return elems / (size_t)p ? elems / (size_t)p : 1;
}
/* A rank's input and output elements for a call of that count. */
static inline size_t timed_in_elems(dpc_coll_t c, size_t count, int p)
{
    return timed_blocks_in(c) ? count * (size_t)p : count;
}
static inline size_t timed_out_elems(dpc_coll_t c, size_t count, int p)
{
    return timed_blocks_out(c) ? count * (size_t)p : count;
}

/* Calls to make before timing calls that move `bytes` each: enough to lap
 * the mailboxes' rings once (their first lap faults pages and lines in),
 * 2 MiB's worth, at least `least` and at most 500. */
static inline int warmup_calls(size_t bytes, int least)
{
    int n = bytes ? (int)((2u << 20) / bytes) : 500;
    return n < least ? least : n > 500 ? 500 : n;
}

/* Writes every 64-byte line of buf once, each with the value it holds (the
 * producer of a call's input: its lines then sit in this core's cache). */
static inline void touch_write_lines(void *buf, size_t bytes)
{
    volatile char *v = buf;
    for (size_t i = 0; i < bytes; i += 64)
        v[i] = v[i];
}

/* Reads every 64-byte line of buf (the consumer of a call's output; the
 * reads are volatile, so they happen though nothing uses them). */
static inline void touch_read_lines(const void *buf, size_t bytes)
{
    const volatile char *v = buf;
    for (size_t i = 0; i < bytes; i += 64)
        (void)v[i];
}

#endif
