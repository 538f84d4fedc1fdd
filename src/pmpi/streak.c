/*
 * The at-once streak's rule (streak.h; why starts leave the thread asleep
 * while it holds: nbc.c).
 *
 * An ask within DPC_QUICK_ASK_NS of its op's start (time in our own starts
 * and waits not counted) adds to the streak. A late ask ends it only when
 * it says the program does something between its starts and its waits:
 *  - two late asks that are independent: the second op started after the
 *    first ask, and no op started between them was asked for in time. One
 *    late ask alone may be the program's thread preempted between its
 *    starts and its wait, which makes every op then in flight late at once;
 *    a reset on it woke the thread for the next starts, whose wake-ups
 *    preempted the program again (one rank woke it 76 times in 1800 starts
 *    on the 2-core VM, and more than 90 in CI). A program that does compute
 *    is late again in its next round, whatever order it asks in (an
 *    MPI_Waitall's ops are asked for newest first: in a training step, the
 *    last bucket, started just before the wait, is asked for in time before
 *    the first is asked for late).
 *  - or one late ask of a thread that slept since the op's start (the
 *    caller's probe: a voluntary context switch since the start). A
 *    preempted thread switches involuntarily; one that sleeps, or waits
 *    for a GPU or a file, gives the core up itself (a probe on the 2-core
 *    VM: 2000 of 2000 late asks after a 300 us sleep showed a voluntary
 *    switch, none of the late asks of a program that waited at once, with
 *    4 processes on the 2 cores: docs/bench/s49/streak). Such a program's
 *    asks follow only our starts, and a switch in a blocking call of ours
 *    in between (whose wait drove the op) costs at most the wake-ups of
 *    the next DPC_QUICK_STREAK starts. Without the rule, a
 *    program that also waits for a call at once in each round (a loss's
 *    all-reduce, or dpcoll_overlap's own timed call) never had two
 *    independent late asks, and its overlapped call waited for the
 *    thread's watch (nbc.c).
 */
#include "config.h"
#include "streak.h"
#include <sys/resource.h>

/* The calling thread's voluntary context switches so far (-1: unknown). */
static long voluntary_switches(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw : -1;
}

void dpc_streak_probe(dpc_streak_probe_t *pr)
{
    pr->by = pthread_self();
    pr->nvcsw = voluntary_switches();
    pr->taken = pr->nvcsw >= 0;
}

bool dpc_streak_slept(const dpc_streak_probe_t *pr)
{
    return pr->taken && pthread_equal(pthread_self(), pr->by) && voluntary_switches() > pr->nvcsw;
}

void dpc_streak_ask(dpc_streak_t *st, uint64_t started_ns, uint64_t inside_ns, uint64_t now,
                    const dpc_streak_probe_t *probe)
{
    uint64_t late = __atomic_load_n(&st->late_ask_ns, __ATOMIC_RELAXED);
    uint64_t quick = __atomic_load_n(&st->quick_since_ns, __ATOMIC_RELAXED);
    if (now - started_ns < DPC_QUICK_ASK_NS + inside_ns) {
        if (__atomic_load_n(&st->quick_asks, __ATOMIC_RELAXED) < DPC_QUICK_STREAK)
            __atomic_add_fetch(&st->quick_asks, 1, __ATOMIC_RELAXED);
        if (late && started_ns > late && (!quick || started_ns < quick))
            __atomic_store_n(&st->quick_since_ns, started_ns, __ATOMIC_RELAXED);
    } else if (!late || started_ns > late) {
        /* (a late op started before the last late ask says nothing new:
         * the same stall made both late. One started after it confirms
         * it, unless an op started in between was asked for in time: then
         * this one is a first late ask again) */
        /* (the probe's system call only here, for a late ask) */
        if ((late && !(quick && quick < started_ns)) || (probe && dpc_streak_slept(probe)))
            __atomic_store_n(&st->quick_asks, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&st->late_ask_ns, now, __ATOMIC_RELAXED);
        __atomic_store_n(&st->quick_since_ns, 0, __ATOMIC_RELAXED);
    }
}
