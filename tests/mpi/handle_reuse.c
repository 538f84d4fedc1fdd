/*
 * A persistent request's handle, given out again by the MPI library while
 * libdpcoll still holds the op it belonged to.
 *
 * The MPI library reuses a freed request handle at once (last freed, first
 * given out). libdpcoll keeps an op listed from its creation (before the
 * library's receive gives it a handle) until it is destroyed (after that
 * receive is freed). Thread B's op is listed and waits for its handle;
 * thread A's op, listed after it, runs and is freed; B then gets A's old
 * handle. If a listed op could still match a handle it no longer (or not
 * yet) holds, B's MPI_Start would restart A's finished collective and B's
 * own would never run: B's request never completes.
 *
 * The two windows are held open deterministically: this program defines
 * PMPI_Recv_init and PMPI_Request_free itself (libdpcoll's calls to them
 * resolve here first) and parks thread B in the first, thread A in the
 * second, until the other thread has done its part. Every wait is bounded.
 */
#define _GNU_SOURCE
#include "mpi_util.h"
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#define HOOK_WAIT_S 10.0

enum { ROLE_NONE, ROLE_A, ROLE_B };
static __thread int role;
static int armed;   /* atomic */
static int stage;   /* atomic: 1 B listed, 2 A's handle freed, 3 B done */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Waits until stage reaches want, HOOK_WAIT_S at most. */
static bool stage_reached(int want)
{
    double end = now_s() + HOOK_WAIT_S;
    while (__atomic_load_n(&stage, __ATOMIC_ACQUIRE) < want)
        if (now_s() > end)
            return false;
        else
            sched_yield();
    return true;
}

static void stage_set(int s) { __atomic_store_n(&stage, s, __ATOMIC_RELEASE); }

/* (default visibility: the build hides symbols unless told) */
#define INTERPOSED __attribute__((visibility("default")))

/* The library's own function, looked up once. Atomic: two threads make
 * their first calls at once (ThreadSanitizer reported the plain pointer's
 * write in one and read in the other, in 1 run of several). */
#define REAL(fn, type) \
    static type real_; \
    type real = __atomic_load_n(&real_, __ATOMIC_ACQUIRE); \
    if (!real) { \
        real = (type)dlsym(RTLD_NEXT, #fn); \
        __atomic_store_n(&real_, real, __ATOMIC_RELEASE); \
    }

typedef int (*recv_init_fn)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
typedef int (*request_free_fn)(MPI_Request *);

INTERPOSED int PMPI_Recv_init(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                   MPI_Request *request)
{
    REAL(PMPI_Recv_init, recv_init_fn)
    if (__atomic_load_n(&armed, __ATOMIC_ACQUIRE) && role == ROLE_B &&
        __atomic_load_n(&stage, __ATOMIC_ACQUIRE) == 0) {
        stage_set(1);          /* B's op is listed; its handle comes next */
        stage_reached(2);      /* after A's handle is back with the library */
    }
    return real(buf, count, type, source, tag, comm, request);
}

INTERPOSED int PMPI_Request_free(MPI_Request *request)
{
    REAL(PMPI_Request_free, request_free_fn)
    int rc = real(request);
    if (__atomic_load_n(&armed, __ATOMIC_ACQUIRE) && role == ROLE_A &&
        __atomic_load_n(&stage, __ATOMIC_ACQUIRE) == 1) {
        stage_set(2);          /* the handle is free: B's receive gets it */
        stage_reached(3);      /* A's op stays listed while B runs */
    }
    return rc;
}

/* A thread whose request is answered by another's op can block inside the
 * library for good (its zero-byte send to itself finds no receive): the
 * test ends the process itself, with a message, rather than hang. */
#define WATCHDOG_S 40.0
static int finished;   /* atomic */

static void *watchdog(void *arg)
{
    (void)arg;
    double end = now_s() + WATCHDOG_S;
    while (!__atomic_load_n(&finished, __ATOMIC_ACQUIRE)) {
        if (now_s() > end) {
            fprintf(stderr, "rank %d: handle reuse: stuck for %.0f s (stage %d): another "
                    "thread's op answered to a persistent request's handle\n", t_rank,
                    WATCHDOG_S, __atomic_load_n(&stage, __ATOMIC_ACQUIRE));
            fflush(stderr);
            _exit(1);
        }
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    return NULL;
}

typedef struct { MPI_Comm c; long base; int role; bool done, right; } side_t;

static void *side_body(void *arg)
{
    side_t *s = arg;
    role = s->role;
    long in[16], out[16];
    for (int k = 0; k < 16; k++) {
        in[k] = s->base + t_rank * 100 + k;
        out[k] = -1;
    }
    if (role == ROLE_A && !stage_reached(1))
        return NULL;   /* B never got to its receive: reported below */
    MPI_Request r;
    MPI_Allreduce_init(in, out, 16, MPI_LONG, MPI_SUM, s->c, MPI_INFO_NULL, &r);
    MPI_Start(&r);
    int flag = 0;
    for (double end = now_s() + HOOK_WAIT_S; !flag && now_s() < end;)
        MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    s->done = flag;
    if (role == ROLE_B)
        stage_set(3);
    if (!flag)
        return NULL;   /* cannot be freed: the program aborts below */
    MPI_Request_free(&r);
    s->right = true;
    for (int k = 0; k < 16; k++)
        if (out[k] != t_size * (s->base + k) + 100L * t_size * (t_size - 1) / 2)
            s->right = false;
    return NULL;
}

START_TEST(test_handle_reuse)
{
    int provided;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        t_agree("handle reuse (MPI_THREAD_MULTIPLE not provided)");
        return;
    }
    MPI_Comm c[2];
    MPI_Comm_dup(MPI_COMM_WORLD, &c[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &c[1]);
    /* a first persistent call on each, so that setting up their state
     * (which makes and frees requests of its own) is over before the hooks */
    for (int i = 0; i < 2; i++) {
        long x = 1, y;
        MPI_Request r;
        MPI_Allreduce_init(&x, &y, 1, MPI_LONG, MPI_SUM, c[i], MPI_INFO_NULL, &r);
        MPI_Start(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Request_free(&r);
    }
    side_t side[2] = {{c[0], 0, ROLE_A, false, false}, {c[1], 5000, ROLE_B, false, false}};
    stage_set(0);
    __atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
    pthread_t th[2], dog;
    pthread_create(&dog, NULL, watchdog, NULL);
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, side_body, &side[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    __atomic_store_n(&finished, 1, __ATOMIC_RELEASE);
    pthread_join(dog, NULL);
    __atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
    t_cases += 2;
    if (!side[0].done || !side[1].done) {
        /* an active request that cannot complete cannot be freed either */
        fprintf(stderr, "rank %d: handle reuse: the persistent allreduce of thread %s never "
                "completed (stage %d): another thread's op answered to its handle\n", t_rank,
                side[0].done ? "B" : "A", stage);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < 2; i++)
        if (!side[i].right)
            t_fail("handle reuse: thread %s's persistent allreduce is wrong", i ? "B" : "A");
    MPI_Comm_free(&c[0]);
    MPI_Comm_free(&c[1]);
    t_agree("a freed persistent request's handle reused by another thread at once");
}
END_TEST

void add_handle_reuse_test(TCase *tc)
{
    tcase_add_test(tc, test_handle_reuse);
}
