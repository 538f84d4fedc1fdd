/*
 * The at-once streak: whether the program waits for its nonblocking ops as
 * soon as it has started them, judged from when it first asks for each
 * op's end. While the streak holds, a start leaves the progress thread
 * asleep (the program's own wait drives the op, and a wake-up would only
 * take a core from a rank); nbc.c says why and what it measured. Kept
 * apart from the shim's globals so that the rule is tested on its own
 * (tests/test_streak.c).
 *
 * The streak's fields are read and written with relaxed atomics: asks come
 * from any program thread, and a lost update only delays the rule by one
 * op. A probe is plain data: written at its call's start, before the
 * request is handed to the program, and only read after.
 */
#ifndef DPC_STREAK_H
#define DPC_STREAK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* An ask later than this after its op's start (time spent in our own
 * starts and waits meanwhile not counted) is late. */
#define DPC_QUICK_ASK_NS 50000u
/* Ops asked for at once in a row that make the streak. */
#define DPC_QUICK_STREAK 8u

typedef struct dpc_streak {
    unsigned quick_asks;     /* ops in a row whose end the program asked for at once
                                after their start, up to DPC_QUICK_STREAK */
    uint64_t late_ask_ns;    /* when the program last asked late for an op started
                                after the one before */
    uint64_t quick_since_ns; /* ... the earliest start since then of an op asked
                                for in time (0: none) */
} dpc_streak_t;

/* The probe behind dpc_streak_ask's slept: taken at a call's start by the
 * thread that starts it, looked at by the thread that asks for its end. */
typedef struct dpc_streak_probe {
    bool taken;
    pthread_t by;    /* the thread that took it */
    long nvcsw;      /* ... and its voluntary context switches then */
} dpc_streak_probe_t;

void dpc_streak_probe(dpc_streak_probe_t *pr);
/* The calling thread took pr and gave its core up since (a sleep, a wait
 * for a device or a file). */
bool dpc_streak_slept(const dpc_streak_probe_t *pr);

/* The program's first ask for the end of an op started at started_ns,
 * at now, having spent inside_ns in our starts and waits since the start.
 * probe (NULL: none taken) says, for a late ask only, whether the asking
 * thread started the op and gave its core up meanwhile (a voluntary
 * context switch: it slept, or waited for a device or a file; or it
 * blocked in a call of ours, which drove the op anyway), so that the late
 * ask is no preemption. */
void dpc_streak_ask(dpc_streak_t *st, uint64_t started_ns, uint64_t inside_ns, uint64_t now,
                    const dpc_streak_probe_t *probe);

static inline bool dpc_streak_holds(const dpc_streak_t *st)
{
    return __atomic_load_n(&st->quick_asks, __ATOMIC_RELAXED) >= DPC_QUICK_STREAK;
}

#endif
