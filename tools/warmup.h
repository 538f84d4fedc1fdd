/* Warm-up before timing, shared by dpcoll_bench and dpcoll_tune. */
#ifndef DPC_TOOLS_WARMUP_H
#define DPC_TOOLS_WARMUP_H

#include <stddef.h>

/* Calls to make before timing calls that move `bytes` each: enough to lap
 * the mailboxes' rings once (their first lap faults pages and lines in),
 * 2 MiB's worth, at least `least` and at most 500. */
static inline int warmup_calls(size_t bytes, int least)
{
    int n = bytes ? (int)((2u << 20) / bytes) : 500;
    return n < least ? least : n > 500 ? 500 : n;
}

#endif
