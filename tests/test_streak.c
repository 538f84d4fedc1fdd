/*
 * The at-once streak (src/pmpi/streak.c): when the progress thread may be
 * left asleep at a start, judged from the program's asks, on made-up
 * clocks; and the probe its "slept" rests on, on this machine's kernel.
 */
#include "config.h"
#include <check.h>
#include "check_run.h"
#include "pmpi/streak.h"
#include <pthread.h>
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

#define US 1000u

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* An op started at t (us) asked for after span us, none of it inside our
 * calls; slept: by a thread that took the op's probe and slept since
 * (really: the probe is the one the library takes). */
static void ask(dpc_streak_t *st, uint64_t t, uint64_t span, bool slept)
{
    dpc_streak_probe_t pr;
    if (slept) {
        dpc_streak_probe(&pr);
        sleep_us(50);
    }
    dpc_streak_ask(st, (t + 1) * US, 0, (t + 1 + span) * US, slept ? &pr : NULL);
}

/* A streak made of DPC_QUICK_STREAK quick asks, the clock at *t after them. */
static dpc_streak_t built(uint64_t *t)
{
    dpc_streak_t st = {0};
    for (unsigned i = 0; i < DPC_QUICK_STREAK; i++, *t += 10)
        ask(&st, *t, 5, false);
    return st;
}

START_TEST(test_builds_from_quick_asks)
{
    dpc_streak_t st = {0};
    uint64_t t = 0;
    for (unsigned i = 0; i + 1 < DPC_QUICK_STREAK; i++, t += 10) {
        ask(&st, t, 5, false);
        ck_assert(!dpc_streak_holds(&st));
    }
    ask(&st, t, 5, false);
    ck_assert(dpc_streak_holds(&st));
    /* time in our own starts and waits is not the program's */
    dpc_streak_t in = {0};
    for (unsigned i = 0; i < DPC_QUICK_STREAK; i++)
        dpc_streak_ask(&in, (1000 + 1000 * i) * US, 480 * US, (1000 + 1000 * i + 500) * US, NULL);
    ck_assert(dpc_streak_holds(&in));
}
END_TEST

/* One late ask alone may be a preemption; two independent ones end it. */
START_TEST(test_two_independent_late_asks_end_it)
{
    uint64_t t = 0;
    dpc_streak_t st = built(&t);
    ask(&st, t, 300, false);   /* late, not slept: one alone */
    ck_assert(dpc_streak_holds(&st));
    t += 400;
    ask(&st, t, 300, false);   /* started after that ask, none in time between */
    ck_assert(!dpc_streak_holds(&st));
}
END_TEST

/* A late ask after an op asked for in time is a first late ask again. */
START_TEST(test_quick_ask_between_keeps_it)
{
    uint64_t t = 0;
    dpc_streak_t st = built(&t);
    for (int round = 0; round < 20; round++) {
        ask(&st, t, 300, false);
        t += 400;
        ask(&st, t, 5, false);
        t += 10;
        ck_assert(dpc_streak_holds(&st));
    }
    /* ops started before the last late ask and asked late with it: the
     * same stall, nothing new */
    ask(&st, t, 300, false);
    ask(&st, t + 1, 299, false);
    ck_assert(dpc_streak_holds(&st));
}
END_TEST

/* The pattern of dpcoll_overlap and of a program that waits for one call at
 * once each round: quick asks between late ones kept the streak for good;
 * a late ask of a thread that slept ends it at once. */
START_TEST(test_slept_late_ask_ends_it)
{
    uint64_t t = 0;
    dpc_streak_t st = built(&t);
    ask(&st, t, 5, false);
    t += 10;
    ask(&st, t, 300, true);
    ck_assert(!dpc_streak_holds(&st));
    /* it builds again from quick asks, slept or not */
    t += 400;
    for (unsigned i = 0; i < DPC_QUICK_STREAK; i++, t += 10)
        ask(&st, t, 5, true);
    ck_assert(dpc_streak_holds(&st));
}
END_TEST

static void compute_a_while(void)
{
    volatile double x = 1;
    for (int k = 0; k < 200000; k++)
        x = x * 1.0000001 + 1e-9;
}

/* Another thread, which sleeps until it has made more voluntary switches
 * than the probe's thread had: its count alone would say "slept". */
static void *sleep_and_look(void *arg)
{
    const dpc_streak_probe_t *pr = arg;
    struct rusage ru;
    for (int i = 0; i < 10000; i++) {
        getrusage(RUSAGE_THREAD, &ru);
        if (ru.ru_nvcsw > pr->nvcsw)
            break;
        sleep_us(10);
    }
    return (void *)(intptr_t)dpc_streak_slept(pr);
}

/* The probe: a sleep gives the core up; computing does not, preempted or
 * not (a preemption is an involuntary switch); and only the thread that
 * took the probe can tell (another thread's switches are not its). */
START_TEST(test_probe_counts_sleeps_not_computing)
{
    for (int i = 0; i < 5; i++) {
        dpc_streak_probe_t pr;
        dpc_streak_probe(&pr);
        ck_assert(pr.taken);
        sleep_us(200);
        ck_assert(dpc_streak_slept(&pr));
    }
    int quiet = 0;
    for (int i = 0; i < 5; i++) {
        dpc_streak_probe_t pr;
        dpc_streak_probe(&pr);
        compute_a_while();
        quiet += !dpc_streak_slept(&pr);
    }
    /* (one in five may meet a page fault that waits for the disk) */
    ck_assert_int_ge(quiet, 4);
    dpc_streak_probe_t pr;
    dpc_streak_probe(&pr);
    pthread_t other;
    void *res;
    ck_assert_int_eq(pthread_create(&other, NULL, sleep_and_look, &pr), 0);
    ck_assert_int_eq(pthread_join(other, &res), 0);   /* (this thread blocks here too) */
    ck_assert(!(intptr_t)res);
    ck_assert(dpc_streak_slept(&pr));
    dpc_streak_probe_t none = {0};
    sleep_us(200);
    ck_assert(!dpc_streak_slept(&none));
}
END_TEST

int main(void)
{
    Suite *su = suite_create("streak");
    TCase *tc = tcase_create("streak");
    tcase_add_test(tc, test_builds_from_quick_asks);
    tcase_add_test(tc, test_two_independent_late_asks_end_it);
    tcase_add_test(tc, test_quick_ask_between_keeps_it);
    tcase_add_test(tc, test_slept_late_ask_ends_it);
    tcase_add_test(tc, test_probe_counts_sleeps_not_computing);
    suite_add_tcase(su, tc);
    return check_run(su);
}
