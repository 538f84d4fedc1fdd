/*
 * Nonblocking collectives as MPI requests, and the progress thread that
 * advances them while the program computes.
 *
 * A nonblocking call starts its schedule and hands back a generalized
 * request of MPICH's extended kind (MPIX_Grequest_class: poll and wait
 * functions), so MPI_Wait, MPI_Test and friends work on it, mixed with any
 * other request. The MPI rules on threads are kept by a split of duties:
 *  - the progress thread only ever touches our own engine (our UCX worker and
 *    our schedules, under dpc_g.lock); it never calls MPI, so it is legal at
 *    every thread level;
 *  - completing a request (unpacking into the user's datatype, the
 *    average's division, MPI_Grequest_complete) happens in poll_fn/wait_fn,
 *    which MPI runs inside the program's own MPI_Test/MPI_Wait calls.
 * The progress thread sleeps on an eventfd while nothing is in flight and
 * on the worker's wakeup fd while something is, so it never spins a core;
 * a user thread that waits drives the engine itself and the progress
 * thread stands aside meanwhile.
 */
#include "config.h"
#include "jobs.h"
#include "ipc.h"
#include "dpc_log.h"
#include "dpc_shm.h"
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* Longest sleep on the wakeup fd: bounds how late a timeout is noticed. */
#define PROG_POLL_MS 1
/* After a wake-up the next event (the peer's answer, the next segment) is
 * usually microseconds away, while sleeping and waking again costs tens of
 * microseconds per message: poll for a while, yielding the core at every
 * turn, before going back to sleep. Not when ranks outnumber cores: there
 * the core belongs to the rank that has work. */
#define PROG_SPIN_NS 100000u
/* A nap where the thread cannot sleep on the fd, and how many turns in a
 * row the fd may be found busy before the thread naps (see progress_main) */
#define PROG_NAP_US 20
#define PROG_BUSY_TURNS 64

static void list_insert_locked(dpc_req_t *op)
{
    op->prev = NULL;
    op->next = dpc_g.ops;
    if (dpc_g.ops)
        dpc_g.ops->prev = op;
    dpc_g.ops = op;
    op->listed = true;
}

static void list_remove_locked(dpc_req_t *op)
{
    if (!op->listed)
        return;
    if (op->prev)
        op->prev->next = op->next;
    else
        dpc_g.ops = op->next;
    if (op->next)
        op->next->prev = op->prev;
    op->listed = false;
}

/* The op is over for good: MPI has freed its request and it is complete. */
void dpc_nbc_destroy(dpc_req_t *op)
{
    dpc_lock(true);
    list_remove_locked(op);
    dpc_ipc_nb_free(op);   /* (its schedules but op->s) */
    if (op->s)
        dpc_sched_destroy(op->s);
    if (op->held)
        dpc_comm_unref_locked(op->c);
    dpc_unlock(true);
    if (op->job->release)
        op->job->release(op->job);
    free(op->job->owned);
    free(op->job);
    free(op);
}

/* Take the lock back, after any user thread that is waiting for it. */
static void relock(void)
{
    while (__atomic_load_n(&dpc_g.lock_wanted, __ATOMIC_RELAXED) > 0)
        sched_yield();
    pthread_mutex_lock(&dpc_g.lock);
}

/*
 * The progress thread's sleep: on an eventfd, which a signal writes to. A
 * start signals the thread unless it is awake (it then finds the op on its
 * loop) or a program thread drives the engine (which signals at its end if
 * the thread is wanted then). The woken thread looks at the drivers
 * without the lock, and sleeps again while one drives.
 *
 * Why not a condition variable on the lock, as before: the woken thread
 * took the lock, which the driving program thread takes and lets go at
 * every turn of its wait, so it blocked on it; the driver's unlock handed
 * it over, and the driver's next lock slept until the thread had seen the
 * driver and gone back to sleep. A 512 KiB MPI_Iallreduce + MPI_Wait on 2
 * ranks took 107-150 us in the runs where the thread was woken so (133-159
 * of 200 calls), 75 us in those where it was not.
 *
 * A start still wakes the thread, which costs a call waited for at once
 * (on the 2-core VM, 2 ranks: 0-30 us at 128-512 KiB, the woken thread
 * taking a core from a rank; none with DPCOLL_PROGRESS_THREAD=idle).
 * Delaying the wake with a timer the start sets and the wait clears cost
 * more: arming and clearing a timerfd took 12 us there at 20 us (a timer
 * before the next tick reprograms the VM's clock).
 */
void dpc_nbc_signal_locked(void)
{
    if (!dpc_g.prog_asleep)
        return;    /* it is on its way round its loop, which looks at everything */
    uint64_t one = 1;
    if (write(dpc_g.prog_evfd, &one, sizeof(one)) < 0)
        dpc_log(DPC_LOG_DEBUG, "progress thread: cannot signal it (%s)", strerror(errno));
    else
        dpc_g.prog_wakes++;
}

/*
 * Starts that do not wake the thread. A program that waits for its ops at
 * once (a batch of MPI_Iallreduce, then MPI_Waitall) drives them in its
 * wait, and the thread a start woke only finds a driver and sleeps again;
 * the wake-up still costs about 10 us of some core on the 2-core VM, where
 * it takes the core of a rank, and the rank it delays answers late, which
 * holds the waits longer still (4 MPI_Iallreduce of 64 KiB in flight at 2
 * ranks, then MPI_Waitall: 11.5-24.5 us a call, the slow runs waking the
 * thread at 60-90% of starts; 9-13 us without a thread, as now; 22-24 us
 * MPICH's own). Time in the program's starts and waits of other ops
 * does not count (nb_inside_ns): four starts of 128 KiB took 50 us, and
 * MPICH's MPI_Waitall asks for one request after the other. So the program's
 * first ask for an op's end (a wait for it begins, or a call completes it)
 * notes whether it came within DPC_QUICK_ASK_NS of the op's start
 * (dpc_nbc_asked); after DPC_QUICK_STREAK such ops in a row, a start (and
 * a wait that ends with ops still running) leaves the thread asleep. Ops
 * the program asks for later (it computed or slept meanwhile) bring the
 * wake-ups back, by the rule in streak.c: two independent late asks, or
 * one whose thread slept since the start. The probe for the second (a
 * getrusage at the start and at a late ask, 0.4 us each here) is taken for
 * calls of DPC_SLEPT_PROBE_MIN and more: there a woken thread paid
 * (dpcoll_overlap -k sleep, 2 ranks, two calls waited for at once before
 * each overlapped one, 8 paired rounds: 4 MiB all-to-all 12% -> 80%
 * hidden, total 0.76 of the time; allreduce 24% -> 44%, 0.80), and below
 * it did not (1 MiB all-to-all behind a sleep took 1.10 of the time with
 * the thread woken; docs/bench/s50).
 * What an op left so misses while the program does compute after all: the
 * thread, while ops run or ran in the last PROG_WATCH_IDLE_NS, sleeps at
 * most PROG_WATCH_MS (prog_watching) and then takes on what nobody drives;
 * only then does a start leave it asleep.
 */
#define PROG_WATCH_MS 1
#define PROG_WATCH_IDLE_NS 100000000u
#define DPC_SLEPT_PROBE_MIN ((size_t)4 << 20)

/* A large call's start: note what dpc_nbc_asked needs to tell a program
 * that slept from one that was preempted. (At every such start, not only
 * while the streak holds: else the streak, rebuilt by the calls waited for
 * at once after a reset, held again every few rounds of dpcoll_overlap and
 * left its overlapped call asleep in those.) */
static void probe_at_start(dpc_req_t *op)
{
    op->probe.taken = false;
    if (op->active_bytes >= DPC_SLEPT_PROBE_MIN)
        dpc_streak_probe(&op->probe);
}

void dpc_nbc_asked(dpc_req_t *op, uint64_t now)
{
    if (op->judged || op->mode == DPC_BLOCKING)
        return;
    op->judged = true;
    __atomic_sub_fetch(&dpc_g.nb_unjudged, 1, __ATOMIC_RELAXED);
    if (!now)
        now = dpc_mono_ns();
    uint64_t inside = __atomic_load_n(&dpc_g.nb_inside_ns, __ATOMIC_RELAXED) - op->inside_at_start;
    dpc_streak_ask(&dpc_g.streak, op->started_ns, inside, now, &op->probe);
}

/* The thread would only find the program driving: it sleeps, watching. */
static bool prog_not_wanted_locked(void)
{
    return dpc_g.prog_asleep && dpc_g.prog_watching && dpc_streak_holds(&dpc_g.streak);
}

/* From under the lock (nothing to do, or a program thread drives) until
 * signalled with no program thread driving, or until a watch's timeout
 * finds none driving; back under it. */
static void prog_sleep_locked(void)
{
    dpc_g.prog_asleep = true;
    dpc_g.prog_watching = dpc_g.nb_active > 0 ||
                          dpc_mono_ns() - dpc_g.nb_last_start_ns < PROG_WATCH_IDLE_NS;
    int timeout = dpc_g.prog_watching ? PROG_WATCH_MS : -1;
    pthread_mutex_unlock(&dpc_g.lock);
    for (;;) {
        struct pollfd pfd = {.fd = dpc_g.prog_evfd, .events = POLLIN};
        uint64_t v;
        if (poll(&pfd, 1, timeout) > 0)
            (void)!read(dpc_g.prog_evfd, &v, sizeof(v));
        /* (a driver that stops after this look signals if the thread is
         * wanted: dpc_op_wait; the eventfd keeps that signal) */
        if (__atomic_load_n(&dpc_g.drivers, __ATOMIC_ACQUIRE) == 0 ||
            __atomic_load_n(&dpc_g.prog_stop, __ATOMIC_ACQUIRE))
            break;
    }
    relock();
    dpc_g.prog_asleep = false;
    dpc_g.prog_watching = false;
}

static void *progress_main(void *arg)
{
    (void)arg;
    dpc_tl_progress_thread = true;
    if (dpc_g.cfg.progress_idle) {
        /* DPCOLL_PROGRESS_THREAD=idle: the thread runs only where a core
         * would idle, and its wake-ups preempt no program thread (see the
         * man page for what that wins and where it loses) */
        struct sched_param sp = {0};
        int e = pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
        if (e)
            dpc_log(DPC_LOG_WARN, "DPCOLL_PROGRESS_THREAD=idle: cannot make the progress thread "
                                  "SCHED_IDLE (%s); it runs at normal priority", strerror(e));
    }
    uint64_t spin_until = 0, spin = dpc_g.oversubscribed ? 0 : PROG_SPIN_NS;
    unsigned busy_turns = 0;
    pthread_mutex_lock(&dpc_g.lock);
    while (!dpc_g.prog_stop) {
        if (dpc_g.nb_active == 0 || dpc_g.drivers > 0) {
            prog_sleep_locked();
            spin_until = dpc_mono_ns() + spin;
            continue;
        }
        bool more = dpc_ops_progress_locked();
        if (dpc_g.nb_active == 0 || dpc_g.drivers > 0)
            continue;
        if (more || (spin && dpc_mono_ns() < spin_until)) {
            /* local work left, or a short poll: let others at the lock,
             * and at the core (a program thread just woken from a sleep or
             * a wait would otherwise queue behind a whole copy) */
            pthread_mutex_unlock(&dpc_g.lock);
            sched_yield();
            relock();
            if (more)
                spin_until = dpc_mono_ns() + spin;
            continue;
        }
        int fd = dpc_ucx_arm(dpc_g.ux);
        if (fd == DPC_UCX_ARM_BUSY) {
            /* Events pending: progress again, but with the lock let go
             * first. A record in the mailbox that no posted receive wants
             * yet (a peer already in a collective on another communicator)
             * stays there and keeps the arm busy until a program thread
             * posts that collective, which takes this lock: holding it
             * across turns would keep the record there for good. After
             * many busy turns in a row it is such a record, not new
             * events: nap instead of spinning a core on it. A turn that
             * found ends to report is not one of those: every one-sided
             * read ends within its call and is reported at the next
             * progress, and counted, the reads of one large call (the
             * direct allreduce's pieces) ran past PROG_BUSY_TURNS and
             * the thread napped between pieces (a 64 MiB MPI_Iallreduce
             * behind a sleep of its own length hid 65%, 100% without the
             * naps; 2 ranks, docs/bench/s49). */
            if (dpc_ucx_work_pending(dpc_g.ux))
                busy_turns = 0;
            pthread_mutex_unlock(&dpc_g.lock);
            if (++busy_turns < PROG_BUSY_TURNS)
                sched_yield();
            else
                usleep(PROG_NAP_US);
            relock();
            continue;
        }
        busy_turns = 0;
        pthread_mutex_unlock(&dpc_g.lock);
        if (fd >= 0) {
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            poll(&pfd, 1, PROG_POLL_MS);
        } else {
            usleep(PROG_NAP_US);           /* no wakeup support: nap, don't spin */
        }
        relock();
        spin_until = dpc_mono_ns() + spin;
    }
    pthread_mutex_unlock(&dpc_g.lock);
    return NULL;
}

/* A small op that no peer needs this process for any more (its messages
 * are out, in the peers' mailboxes, and what is left are receives that
 * complete by themselves: dpc_sched_settled) is left to the program's
 * MPI_Wait or MPI_Test: waking the progress thread for it costs more than
 * the whole call (an 8-byte MPI_Iallreduce + MPI_Wait on 2 ranks took
 * 1.3-1.4 us with the wake-up and the lock it then contends for, 0.5 us
 * without). Only so many bytes at a time: records the program has not yet
 * asked for stay in the mailbox rings meanwhile (512 KiB from each peer up
 * to 16 processes), and those must not fill up. Once this allowed 4 ops at
 * a time: a batch of 16 8-byte MPI_Iallreduce and an MPI_Waitall woke the
 * thread at every call and took 2.0-2.2 us per call on 2 ranks, 0.9-1.0
 * without the thread, as MPICH's own. A call itself is bounded by the same
 * budget of bytes in flight (it counts in nb_active_bytes while it runs):
 * it used to be by 8 KiB besides, and one of 16 KiB, whose blocks of 8 KiB
 * at 2 ranks go through the mailboxes within the call as well, woke the
 * thread at every start; 4 of them in flight (MPI_Iallgather,
 * MPI_Ialltoall, then MPI_Waitall) took 3-37 us a call, in spells of tens
 * of rounds, against 1.5-2 us for MPICH's own and 1.9 us left to the
 * program. settled says whether a call's messages are out. */
#define DPC_LEAVE_MAX_OPS 64
static size_t leave_max_total;   /* a quarter of a ring, 64 KiB at most (dpc_nbc_init) */
static bool leave_to_program_locked(const dpc_req_t *op)
{
    return !op->ipc && op->s &&
           __atomic_load_n(&dpc_g.nb_active, __ATOMIC_RELAXED) <= DPC_LEAVE_MAX_OPS &&
           __atomic_load_n(&dpc_g.nb_active_bytes, __ATOMIC_RELAXED) <= leave_max_total &&
           dpc_sched_settled(op->s);
}

void dpc_nbc_inside(uint64_t entered_ns)
{
    if (entered_ns)
        __atomic_add_fetch(&dpc_g.nb_inside_ns, dpc_mono_ns() - entered_ns, __ATOMIC_RELAXED);
}

void dpc_nbc_started_locked(dpc_req_t *op, uint64_t entered_ns)
{
    if (entered_ns)     /* (a start while ops ran: not the program's own time) */
        __atomic_add_fetch(&dpc_g.nb_inside_ns, dpc_mono_ns() - entered_ns, __ATOMIC_RELAXED);
    /* (over already, or left to the program's wait: no thread to wake, and
     * nothing to learn from when the program asks; a small call's start,
     * 0.5-1.5 us, does not read the clock, 25 ns a time here) */
    op->judged = !op->running || leave_to_program_locked(op);
    if (op->judged)
        return;
    __atomic_add_fetch(&dpc_g.nb_unjudged, 1, __ATOMIC_RELAXED);
    op->started_ns = dpc_g.nb_last_start_ns = dpc_mono_ns();
    op->inside_at_start = __atomic_load_n(&dpc_g.nb_inside_ns, __ATOMIC_RELAXED);
    probe_at_start(op);
    /* (a program thread driving the engine signals at its end if the
     * thread is wanted then) */
    if (dpc_g.drivers > 0)
        return;
    if (prog_not_wanted_locked()) {
        dpc_g.prog_wakes_spared++;
        return;
    }
    dpc_nbc_signal_locked();
}

void dpc_nbc_hand_on_locked(void)
{
    if (dpc_g.drivers == 0 && dpc_g.nb_active > 0 && !prog_not_wanted_locked() &&
        !dpc_nbc_leavable_locked())
        dpc_nbc_signal_locked();
}

void dpc_nbc_hand_over(void)
{
    if (__atomic_load_n(&dpc_g.nb_active, __ATOMIC_ACQUIRE) == 0)
        return;
    dpc_lock(true);
    dpc_nbc_hand_on_locked();
    dpc_unlock(true);
}

/* (the walk stops once it has seen every running op; it gives up, as if
 * one were not leavable, after this many, which idle persistent requests
 * in the list could otherwise make long at every wait) */
#define DPC_LEAVE_MAX_WALK (4 * DPC_LEAVE_MAX_OPS)
bool dpc_nbc_leavable_locked(void)
{
    int active = __atomic_load_n(&dpc_g.nb_active, __ATOMIC_RELAXED), seen = 0, walked = 0;
    if (active > DPC_LEAVE_MAX_OPS)
        return false;
    for (const dpc_req_t *op = dpc_g.ops; op && seen < active; op = op->next) {
        if (++walked > DPC_LEAVE_MAX_WALK)
            return false;
        if (!op->running || op->mode == DPC_BLOCKING)
            continue;
        if (!leave_to_program_locked(op))
            return false;
        seen++;
    }
    return true;
}

/* Calls fn on each nonblocking op of ours among reqs whose schedule runs,
 * under the lock; returns how many there are. */
static int each_running_in(int n, const MPI_Request *reqs, void (*fn)(dpc_req_t *op, void *arg),
                           void *arg)
{
    int found = 0;
    dpc_lock(true);
    int active = dpc_g.nb_active, seen = 0;
    for (dpc_req_t *op = dpc_g.ops; op && seen < active; op = op->next) {
        if (!op->running || op->mode == DPC_BLOCKING)
            continue;
        seen++;
        if (op->mode != DPC_NONBLOCKING || op->freed)
            continue;
        for (int i = 0; i < n; i++)
            if (reqs[i] == op->req) {
                found++;
                fn(op, arg);
                break;
            }
    }
    dpc_unlock(true);
    return found;
}

static void note_first(dpc_req_t *op, void *first)
{
    if (first && !*(dpc_req_t **)first)
        *(dpc_req_t **)first = op;
}

int dpc_nbc_running_in(int n, const MPI_Request *reqs, dpc_req_t **first)
{
    if (n <= 0 || __atomic_load_n(&dpc_g.nb_active, __ATOMIC_RELAXED) == 0)
        return 0;
    if (first)
        *first = NULL;
    return each_running_in(n, reqs, note_first, first);
}

void dpc_nbc_wait_for(dpc_req_t *op, bool series)
{
    uint64_t entered = dpc_nbc_entering();
    dpc_nbc_asked(op, entered);
    if (!dpc_op_ended(op))
        (series ? dpc_op_wait_in_series : dpc_op_wait)(op);
    dpc_nbc_inside(entered);
}

void dpc_nbc_drive(MPI_Request req)
{
    dpc_req_t *op = NULL;
    if (dpc_nbc_running_in(1, &req, &op) && !dpc_op_ended(op))
        dpc_nbc_wait_for(op, false);
}

static void ask_at(dpc_req_t *op, void *now)
{
    dpc_nbc_asked(op, *(uint64_t *)now);
}

void dpc_nbc_asked_in(int n, const MPI_Request *reqs)
{
    if (n <= 0 || __atomic_load_n(&dpc_g.nb_unjudged, __ATOMIC_RELAXED) <= 0)
        return;
    uint64_t now = dpc_mono_ns();
    each_running_in(n, reqs, ask_at, &now);
}

/* Complete the op towards MPI (in a thread that is inside an MPI call). */
static void op_finish_request(dpc_req_t *op)
{
    if (op->completed)
        return;
    dpc_nbc_asked(op, 0);
    dpc_op_complete(op);
    PMPI_Grequest_complete(op->req);
}

int dpc_collective_status(MPI_Status *status, int err)
{
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = err;
    return err;
}

static int greq_query(void *extra, MPI_Status *status)
{
    const dpc_req_t *op = extra;
    return dpc_collective_status(status, op->err);
}

static int greq_free(void *extra)
{
    dpc_req_t *op = extra;
    op->freed = true;
    if (op->completed)
        dpc_nbc_destroy(op);
    else   /* MPI_Request_free on a running op: dpc_nbc_reap finishes it */
        __atomic_add_fetch(&dpc_g.nb_orphans, 1, __ATOMIC_RELAXED);
    return MPI_SUCCESS;
}

static int greq_cancel(void *extra, int complete)
{
    dpc_req_t *op = extra;
    (void)complete;
    /* MPI does not allow cancelling a collective; it runs to its end */
    dpc_log(DPC_LOG_WARN, "MPI_Cancel on a nonblocking %s: collectives cannot be cancelled; "
                          "it completes normally", op->job->call);
    return MPI_SUCCESS;
}

static int greq_poll(void *extra, MPI_Status *status)
{
    dpc_req_t *op = extra;
    (void)status;
    if (op->completed)
        return MPI_SUCCESS;
    bool lk = dpc_need_lock();
    dpc_lock(lk);
    /* a test is a good moment to move everything on, progress thread or not */
    if (op->running && dpc_g.drivers == 0)
        dpc_ops_progress_locked();
    bool done = op->done;
    dpc_unlock(lk);
    if (done)
        op_finish_request(op);
    return MPI_SUCCESS;
}

static int greq_wait(int count, void **extras, double timeout, MPI_Status *status)
{
    (void)timeout;
    (void)status;
    bool waited = false;
    uint64_t now = dpc_nbc_entering();
    for (int i = 0; i < count; i++)
        dpc_nbc_asked(extras[i], now);
    for (int i = 0; i < count; i++) {
        dpc_req_t *op = extras[i];
        if (op->completed)
            continue;
        if (!dpc_op_ended(op)) {
            dpc_op_wait_in_series(op);
            waited = true;
        }
        op_finish_request(op);
    }
    if (waited) {
        dpc_nbc_inside(now);
        dpc_nbc_hand_over();
    }
    return MPI_SUCCESS;
}

int dpc_nbc_post(dpc_req_t *op, MPI_Request *req)
{
    dpc_job_t *j = op->job;
    *req = MPI_REQUEST_NULL;
    dpc_lock(true);
    list_insert_locked(op);
    dpc_unlock(true);
    if (op->mode == DPC_PERSISTENT) {
        int err = dpc_persist_create(op, req);
        if (err != MPI_SUCCESS) {
            MPI_Comm comm = op->comm;
            const char *call = j->call;
            op->completed = true;
            dpc_nbc_destroy(op);
            return dpc_raise(comm, err, "%s: cannot create the persistent request", call);
        }
        return MPI_SUCCESS;
    }
    int err = dpc_op_start(op);
    if (err == MPI_SUCCESS) {
        err = PMPIX_Grequest_class_allocate(dpc_g.greq_class, op, &op->req);
        if (err != MPI_SUCCESS) {
            /* cannot hand it out: finish it here, then report */
            if (!dpc_op_ended(op))
                dpc_op_wait(op);
            dpc_op_complete(op);
            err = dpc_raise(op->comm, MPI_ERR_INTERN, "%s: cannot create a request", j->call);
        }
    }
    if (err != MPI_SUCCESS) {
        op->completed = true;
        dpc_nbc_destroy(op);
        return err;
    }
    /* (err was raised through the handler already) */
    *req = op->req;
    return MPI_SUCCESS;
}

static int done_query(void *extra, MPI_Status *status)
{
    (void)extra;
    return dpc_collective_status(status, MPI_SUCCESS);
}
static int done_free(void *extra) { (void)extra; return MPI_SUCCESS; }
static int done_cancel(void *extra, int complete) { (void)extra; (void)complete; return MPI_SUCCESS; }

int dpc_done_request(MPI_Request *req)
{
    int rc = PMPI_Grequest_start(done_query, done_free, done_cancel, NULL, req);
    return rc == MPI_SUCCESS ? PMPI_Grequest_complete(*req) : rc;
}

void dpc_nbc_reap(bool all)
{
    for (;;) {
        dpc_req_t *victim = NULL;
        dpc_lock(true);
        for (dpc_req_t *op = dpc_g.ops; op && !victim; op = op->next)
            if ((all || op->freed) && (op->mode == DPC_NONBLOCKING) && !op->completed)
                victim = op;
        dpc_unlock(true);
        if (!victim)
            return;
        if (!all && !dpc_op_ended(victim))
            return;      /* still running: another time */
        bool was_freed = victim->freed;
        if (!dpc_op_ended(victim))
            dpc_op_wait(victim);
        /* MPI called free_fn already (was_freed): it will not again, so the
         * op goes here; otherwise completing the request calls it */
        op_finish_request(victim);
        if (was_freed) {
            __atomic_sub_fetch(&dpc_g.nb_orphans, 1, __ATOMIC_RELAXED);
            dpc_nbc_destroy(victim);
        }
    }
}

static void close_prog_fds(void)
{
    if (dpc_g.prog_evfd >= 0)
        close(dpc_g.prog_evfd);
    dpc_g.prog_evfd = -1;
}

int dpc_nbc_init(void)
{
    dpc_g.prog_evfd = -1;
    leave_max_total = dpc_shm_ring_bytes(dpc_g.world_size) / 4;
    if (leave_max_total > 65536)
        leave_max_total = 65536;
    int rc = dpc_persist_init();
    if (rc != MPI_SUCCESS)
        return rc;
    rc = PMPIX_Grequest_class_create(greq_query, greq_free, greq_cancel, greq_poll, greq_wait,
                                        &dpc_g.greq_class);
    if (rc != MPI_SUCCESS)
        return rc;
    if (dpc_g.cfg.progress_thread) {
        int e = 0;
        dpc_g.prog_evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (dpc_g.prog_evfd < 0)
            e = errno;
        else
            e = pthread_create(&dpc_g.prog_thread, NULL, progress_main, NULL);
        if (e) {
            dpc_log(DPC_LOG_WARN, "no progress thread (%s): nonblocking collectives advance "
                                  "only inside MPI calls", strerror(e));
            close_prog_fds();
        } else {
            dpc_g.prog_running = true;
        }
    }
    return MPI_SUCCESS;
}

void dpc_nbc_fini(void)
{
    /* the program should have completed every request; finish what it left */
    dpc_nbc_reap(true);
    dpc_persist_destroy_all();
    if (dpc_g.prog_running) {
        pthread_mutex_lock(&dpc_g.lock);
        __atomic_store_n(&dpc_g.prog_stop, true, __ATOMIC_RELEASE);
        dpc_nbc_signal_locked();
        pthread_mutex_unlock(&dpc_g.lock);
        pthread_join(dpc_g.prog_thread, NULL);
        dpc_g.prog_running = false;
    }
    close_prog_fds();
}
