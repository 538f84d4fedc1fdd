/* Can a late ask be told from a preempted program by the program thread's
 * own counters? Each round: read the clocks and getrusage(RUSAGE_THREAD)
 * (a "start"), then do KIND for T us, then read both again (an "ask").
 * An ask is late when more than 50 us passed (DPC_QUICK_ASK_NS). Prints,
 * for the late rounds: how many, and how many of them had CPU time over
 * half the span, a voluntary context switch, an involuntary one only.
 * KIND: cpu (spin on the clock), sleep (nanosleep), none (nothing: an
 * at-once program; late only when preempted; run several at once on the
 * cores with `yes > /dev/null &` beside them to see preemption).
 *   cc -O2 -o late_probe late_probe.c && ./late_probe cpu 300 2000
 * (not built by make: a measurement behind a note) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
/* (the thread's CPU clock: getrusage's times go by the tick here) */
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv)
{
    const char *kind = argc > 1 ? argv[1] : "none";
    double t = (argc > 2 ? atof(argv[2]) : 300) * 1e-6;
    int n = argc > 3 ? atoi(argv[3]) : 2000, late = 0, busy = 0, vol = 0, invol_only = 0, none = 0;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        struct rusage a, b;   /* (outside the clocks: a preemption between the
                                 clocks is then between these too) */
        getrusage(RUSAGE_THREAD, &a);
        double t0 = now(), c0 = cpu();
        if (!strcmp(kind, "cpu")) {
            while (now() - t0 < t) { }
        } else if (!strcmp(kind, "sleep")) {
            struct timespec ts = {0, (long)(t * 1e9)};
            nanosleep(&ts, NULL);
        }
        double dc = cpu() - c0, span = now() - t0;
        getrusage(RUSAGE_THREAD, &b);
        if (span <= 50e-6)
            continue;
        late++;
        worst = span > worst ? span : worst;
        long dv = b.ru_nvcsw - a.ru_nvcsw, di = b.ru_nivcsw - a.ru_nivcsw;
        if (dc > span / 2)
            busy++;
        else if (dv > 0)
            vol++;
        else if (di > 0)
            invol_only++;
        else
            none++;
        /* (an at-once program: spread the rounds out a little) */
        if (!strcmp(kind, "none")) { double u = now(); while (now() - u < 20e-6) { } }
    }
    printf("%-5s %6.0f us x %d: %d late (worst %.0f us): cpu over half %d, a voluntary switch %d, "
           "involuntary only %d, neither %d\n", kind, t * 1e6, n, late, worst * 1e6, busy, vol,
           invol_only, none);
    return 0;
}
