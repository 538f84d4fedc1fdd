/*
 * CUDA support in the shim: loading the plugin (see dpc_cuda.h), telling
 * device buffers from host ones, and staging device buffers through host
 * copies.
 *
 * The staging here is the plain version of the data path: every device
 * buffer of a call is copied to pinned host memory, the call runs on the
 * host copies (any algorithm, any mix of device and host buffers across
 * ranks), and the results are copied back. Host code never touches device
 * memory. Each rank decides for its own buffers only, so ranks may differ.
 */
#include "config.h"
#include "shim.h"
#include "dpc_cuda.h"
#include "dpc_log.h"
#include "stage.h"
#include "ipc.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const dpc_cuda_plugin_t *dpc_cuda;
static void *stream;
static char status[256] = "not built with CUDA";

static int queue_streams(void);

void dpc_cuda_load(void)
{
    const char *v = getenv("DPCOLL_CUDA"), *env = getenv("DPCOLL_CUDA_PLUGIN");
    if (v && !strcmp(v, "0")) {
        snprintf(status, sizeof(status), "off (DPCOLL_CUDA=0)");
        return;
    }
#ifndef DPC_HAVE_CUDA
    if (!env || !*env)      /* (a plugin named explicitly loads in any build: tests) */
        return;
#endif
    const char *paths[] = {env,
#ifdef DPC_HAVE_CUDA
                           DPC_PKGLIBDIR "/libdpcoll_cuda.so", DPC_BUILDDIR "/.libs/libdpcoll_cuda.so"
#endif
    };
    void *h = NULL;
    char err[200] = "not found";
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && !h; i++) {
        if (!paths[i] || !*paths[i])
            continue;
        if (!(h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL)))
            snprintf(err, sizeof(err), "%s", dlerror());
    }
    dpc_cuda_plugin_get_fn get = h ? (dpc_cuda_plugin_get_fn)dlsym(h, DPC_CUDA_PLUGIN_SYMBOL) : NULL;
    const dpc_cuda_plugin_t *p = get ? get(DPC_CUDA_PLUGIN_VERSION) : NULL;
    char why[200] = "";
    int n = p ? p->init(why, sizeof(why)) : -1;
    /* (no stream yet: that would make a CUDA context on the default GPU in
     * every rank, before the program has chosen its own; streams come at
     * the first call with a device buffer, on the GPU the program uses) */
    if (p && n > 0) {
        dpc_cuda = p;
        snprintf(status, sizeof(status), "on, %d device%s", n, n > 1 ? "s" : "");
        return;
    }
    /* no library, no driver or no device: host buffers only, said once */
    snprintf(status, sizeof(status), "off: %s", !h ? err : !p ? "plugin version mismatch" : why);
    if (dpc_g.world_rank == 0)
        dpc_log(DPC_LOG_INFO, "CUDA %s; device buffers are not handled in this run", status);
    /* the plugin stays loaded: unloading the CUDA runtime mid-process is not safe */
}

void *dpc_cuda_staging_stream(void)
{
    return stream;
}

bool dpc_cuda_is_device(const void *p)
{
    return dpc_cuda && p && p != MPI_IN_PLACE && dpc_cuda->is_device(p);
}

/*
 * Pinned host memory is slow to get: cudaMallocHost locks and maps every
 * page (milliseconds for tens of MiB), and training calls repeat with the
 * same sizes. So blocks given back are kept and handed out again (the
 * smallest that fits), at most PINNED_KEEP of them idle; MPI_Finalize frees
 * them. Every rank thread may stage: a lock.
 */
#define PINNED_KEEP 8
typedef struct { void *p; size_t cap; bool busy; } pinned_blk_t;
static pinned_blk_t *blks;
static int nblks, capblks;
static pthread_mutex_t pinned_lock = PTHREAD_MUTEX_INITIALIZER;

static int grow_blks(void)
{
    int ncap = capblks ? 2 * capblks : 16;
    pinned_blk_t *n = realloc(blks, sizeof(pinned_blk_t) * (size_t)ncap);
    if (!n)
        return -1;
    blks = n;
    capblks = ncap;
    return 0;
}

static int pinned_get(void **out, size_t bytes)
{
    bytes = bytes ? bytes : 1;
    pthread_mutex_lock(&pinned_lock);
    int best = -1;
    for (int i = 0; i < nblks; i++)
        if (!blks[i].busy && blks[i].cap >= bytes && (best < 0 || blks[i].cap < blks[best].cap))
            best = i;
    int rc = 0;
    if (best >= 0) {
        blks[best].busy = true;
        *out = blks[best].p;
    } else if (nblks == capblks && grow_blks()) {
        rc = 2;
    } else {
        void *p = NULL;
        if ((rc = dpc_cuda->host_alloc(&p, bytes)) == 0) {
            blks[nblks++] = (pinned_blk_t){p, bytes, true};
            *out = p;
        }
    }
    pthread_mutex_unlock(&pinned_lock);
    return rc;
}

static void pinned_put(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&pinned_lock);
    int idle = 0, smallest = -1;
    for (int i = 0; i < nblks; i++) {
        if (blks[i].p == p)
            blks[i].busy = false;
        if (!blks[i].busy) {
            idle++;
            if (smallest < 0 || blks[i].cap < blks[smallest].cap)
                smallest = i;
        }
    }
    if (idle > PINNED_KEEP) {
        dpc_cuda->host_free(blks[smallest].p);
        blks[smallest] = blks[--nblks];
    }
    pthread_mutex_unlock(&pinned_lock);
}

static void pinned_fini(void)
{
    for (int i = 0; i < nblks; i++)
        dpc_cuda->host_free(blks[i].p);   /* (a block still busy belongs to a leaked request) */
    free(blks);
    blks = NULL;
    nblks = capblks = 0;
}

/* [lo, hi) bytes from buf that n blocks of counts[i] elements at displs[i]
 * extents (or count elements) of dt cover. */
static int span(MPI_Datatype dt, int n, const int *counts, int count, const int *displs,
                MPI_Aint *lo, MPI_Aint *hi)
{
    MPI_Aint lb, ext, tlb, text;
    if (PMPI_Type_get_extent(dt, &lb, &ext) || PMPI_Type_get_true_extent(dt, &tlb, &text))
        return MPI_ERR_TYPE;
    *lo = 0;
    *hi = 0;
    bool any = false;
    for (int i = 0; i < (counts ? n : 1); i++) {
        int c = counts ? counts[i] : count;
        if (c <= 0)
            continue;
        MPI_Aint at = (displs ? displs[i] : 0) * ext, first = at + tlb,
                 last = at + (MPI_Aint)(c - 1) * ext + tlb + text;
        if (ext < 0) {   /* negative extents run backwards */
            MPI_Aint t = first;
            first = at + (MPI_Aint)(c - 1) * ext + tlb;
            last = t + text;
        }
        *lo = any && *lo < first ? *lo : first;
        *hi = any && *hi > last ? *hi : last;
        any = true;
    }
    return MPI_SUCCESS;
}

/* Does the call write every byte of the span d describes? Only when its
 * type has no holes and the blocks tile the span (receive blocks may not
 * overlap, so their sizes adding up to the span's length is enough). */
static bool span_filled(const dpc_span_t *d)
{
    MPI_Aint lb, ext, tlb, text, lo, hi;
    int size;
    if (PMPI_Type_get_extent(d->dt, &lb, &ext) || PMPI_Type_get_true_extent(d->dt, &tlb, &text) ||
        PMPI_Type_size(d->dt, &size) || (MPI_Aint)size != ext || text != ext ||
        span(d->dt, d->n, d->counts, d->count, d->displs, &lo, &hi))
        return false;
    MPI_Aint sum = 0;
    for (int i = 0; i < (d->counts ? d->n : 1); i++) {
        int c = d->counts ? d->counts[i] : d->count;
        sum += c > 0 ? (MPI_Aint)c * ext : 0;
    }
    return sum == hi - lo;
}

int dpc_stage_in(dpc_stage_t *st, const void *dev, MPI_Datatype dt, int n, const int *counts,
                 int count, const int *displs, bool copy_in, void **host)
{
    memset(st, 0, sizeof(*st));
    st->dev = (void *)dev;
    int rc = span(dt, n, counts, count, displs, &st->lo, &st->hi);
    if (rc)
        return rc;
    size_t len = (size_t)(st->hi - st->lo);
    if ((rc = pinned_get((void **)&st->host, len)) != 0) {
        st->host = NULL;
        return MPI_ERR_NO_MEM;
    }
    if (copy_in && len && ((rc = dpc_cuda->copy_async(st->host, (char *)dev + st->lo, len, stream)) ||
                           (rc = dpc_cuda->stream_sync(stream)))) {
        dpc_log(DPC_LOG_ERROR, "device to host copy: %s", dpc_cuda->error_string(rc));
        return MPI_ERR_OTHER;
    }
    *host = st->host - st->lo;    /* the same offsets as the device buffer */
    return MPI_SUCCESS;
}

int dpc_stage_out(dpc_stage_t *st)
{
    size_t len = (size_t)(st->hi - st->lo);
    int rc;
    if (len && ((rc = dpc_cuda->copy_async((char *)st->dev + st->lo, st->host, len, stream)) ||
                (rc = dpc_cuda->stream_sync(stream)))) {
        dpc_log(DPC_LOG_ERROR, "host to device copy: %s", dpc_cuda->error_string(rc));
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

void dpc_stage_free(dpc_stage_t *st)
{
    pinned_put(st->host);
    st->host = NULL;
}

/* The copies a staged call hands to its job (dpc_stage_pair with ours):
 * one call at a time per thread, claimed by dpc_run in the same thread. */
static DPC_TLS bool hand_pending;
/* Between dpc_stage_pair and dpc_stage_done: the call on the host copies is
 * running (only this rank is in it: no new collective decision there). */
static DPC_TLS bool staged_inner;
static __thread dpc_stage_t hand_send, hand_recv;
static DPC_TLS bool hand_copied;   /* dpc_stage_pair copied the data in */

int dpc_stage_pair(MPI_Comm comm, const char *call, dpc_mode_t mode, bool ours, dpc_stage_t *ss,
                   const void *sbuf, dpc_span_t sd, void **hs, dpc_stage_t *rs, void *rbuf,
                   dpc_span_t rd, void **hr)
{
    /* the MPI library's own persistent call could not copy at each start */
    if (mode == DPC_PERSISTENT && !ours)
        return dpc_raise(comm, MPI_ERR_BUFFER, "%s: a persistent collective on device buffers "
                         "that goes to the MPI library (here: its op) is not supported", call);
    memset(ss, 0, sizeof(*ss));
    memset(rs, 0, sizeof(*rs));
    *hs = (void *)sbuf;
    *hr = rbuf;
    int err = MPI_SUCCESS;
    bool dev_s = dpc_cuda_is_device(sbuf), dev_r = dpc_cuda_is_device(rbuf);
    if ((dev_s || dev_r) && (err = dpc_cuda_order_after_user(comm, call, DPC_ORDER_STAGING)))
        return err;
    /* The receive side is copied in too when the call reads it (in place,
     * a bcast: sbuf NULL), or leaves parts of its span unwritten (gaps of a
     * datatype, between blocks: they must go back unchanged). Otherwise
     * the call writes all of it, and a copy in would be wasted. */
    bool r_out_only = dev_r && sbuf && span_filled(&rd);
    /* a request that tries device to device first, and can go here,
     * copies in only if that falls back (ipc_nb.c) */
    bool now = !(ours && mode != DPC_BLOCKING && dpc_ipc_pending_may_go());
    if (dev_s)
        err = dpc_stage_in(ss, sbuf, sd.dt, sd.n, sd.counts, sd.count, sd.displs, now, hs);
    if (!err && dev_r) {
        err = dpc_stage_in(rs, rbuf, rd.dt, rd.n, rd.counts, rd.count, rd.displs,
                           now && !r_out_only, hr);
        rs->out_only = r_out_only;
    }
    if (err) {
        dpc_stage_free(ss);
        dpc_stage_free(rs);
        return dpc_raise(comm, err, "%s: cannot stage a device buffer through host memory", call);
    }
    if (ours) {
        hand_send = *ss;
        hand_recv = *rs;
        hand_pending = true;
        hand_copied = now;
    }
    staged_inner = true;
    return MPI_SUCCESS;
}

bool dpc_stage_inner(void)
{
    return staged_inner;
}

int dpc_stage_done(MPI_Comm comm, const char *call, dpc_stage_t *ss, dpc_stage_t *rs, int err,
                   dpc_mode_t mode, bool ours, MPI_Request *req)
{
    staged_inner = false;
    if (ours) {
        if (!hand_pending)
            return err;          /* the job has them, and copies back at its end */
        hand_pending = false;    /* the call failed before it had a job */
        dpc_stage_free(ss);
        dpc_stage_free(rs);
        return err;
    }
    /* the MPI library's nonblocking call on the copies: a request of ours
     * over it copies the result back when it ends (stage_nb.c) */
    if (!err && mode == DPC_NONBLOCKING) {
        if ((err = dpc_stage_nb_request(ss, rs, call, req)) == MPI_SUCCESS)
            return MPI_SUCCESS;
        /* (no request of ours: wait for it here) */
        if ((err = PMPI_Wait(req, MPI_STATUS_IGNORE)))
            err = dpc_raise(comm, err, "%s: the MPI library's call on the host copies failed",
                            call);
    }
    if (!err && rs->host && (err = dpc_stage_out(rs)))
        err = dpc_raise(comm, err, "%s: cannot copy the result back to the device", call);
    dpc_stage_free(ss);
    dpc_stage_free(rs);
    if (err || mode == DPC_BLOCKING)
        return err;
    return dpc_done_request(req);   /* ran to the end already */
}

void dpc_stage_claim(dpc_job_t *j, dpc_mode_t mode)
{
    if (!hand_pending)
        return;
    hand_pending = false;
    j->dev_send = hand_send;
    j->dev_recv = hand_recv;
    j->dev_staged = true;
    /* just copied in by dpc_stage_pair; a persistent call's data are read
     * at each MPI_Start, the first one included */
    j->dev_fresh = mode != DPC_PERSISTENT && hand_copied;
}

static int copy_in(dpc_stage_t *st)
{
    size_t len = (size_t)(st->hi - st->lo);
    int rc;
    if (st->host && len && !st->out_only && ((rc = dpc_cuda->copy_async(st->host, (char *)st->dev + st->lo, len,
                                                       stream)) ||
                            (rc = dpc_cuda->stream_sync(stream)))) {
        dpc_log(DPC_LOG_ERROR, "device to host copy: %s", dpc_cuda->error_string(rc));
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

int dpc_job_stage_in_now(dpc_job_t *j)
{
    if (j->dev_fresh) {
        j->dev_fresh = false;
        return MPI_SUCCESS;
    }
    int err = copy_in(&j->dev_send);
    return err ? err : copy_in(&j->dev_recv);
}

int dpc_job_stage_in(dpc_job_t *j, MPI_Comm comm)
{
    int err = dpc_job_stage_in_now(j);
    return err ? dpc_raise(comm, err, "%s: cannot copy a device buffer to the host", j->call)
               : MPI_SUCCESS;
}

int dpc_job_stage_out(dpc_job_t *j, MPI_Comm comm)
{
    int err = j->dev_recv.host ? dpc_stage_out(&j->dev_recv) : MPI_SUCCESS;
    return err ? dpc_raise(comm, err, "%s: cannot copy the result back to the device", j->call)
               : MPI_SUCCESS;
}

void dpc_job_stage_free(dpc_job_t *j)
{
    if (j->dev_staged) {
        dpc_stage_free(&j->dev_send);
        dpc_stage_free(&j->dev_recv);
        j->dev_staged = false;
    }
}

/*
 * Device work for schedules (dpc_device_ops_t): three streams, copies
 * towards the host, copies towards the device, and reductions, so that
 * each overlaps the others and the transfers; each piece of work records
 * an event, and progress polls them in order, never blocking.
 */
#define NQUEUE 3
#define Q_REDUCE 2
typedef struct pend { void *ev; dpc_xfer_cb_t cb; void *arg; } pend_t;
static struct {
    void *stream[NQUEUE];
    pend_t *q[NQUEUE];
    int head[NQUEUE], tail[NQUEUE], cap[NQUEUE];
    void **spare_ev;
    int nspare, capspare;
} dv;

static const char *const queue_what[NQUEUE] = {"device to host copy", "host to device copy",
                                               "device reduction"};

/* All streams are made together, before the first copy of the first call
 * with a device buffer, so that a call's order_after_user reaches each one
 * a later step of it may use (and no thread creates one while another
 * waits on them). */
static void *all_streams[NQUEUE + 1];   /* the queues' and the staging stream */

static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
static bool streams_made;

/* The streams, made at the first call with a device buffer (see
 * dpc_cuda_load), on the calling thread's current GPU. */
static int queue_streams(void)
{
    pthread_mutex_lock(&streams_lock);
    int rc = 0;
    if (streams_made || (rc = dpc_cuda->stream_create(&stream)) != 0) {
        pthread_mutex_unlock(&streams_lock);
        if (rc)
            dpc_log(DPC_LOG_ERROR, "cannot create a CUDA stream: %s", dpc_cuda->error_string(rc));
        return rc;
    }
    all_streams[NQUEUE] = stream;
    for (int k = 0; k < NQUEUE; k++) {
        int qrc = dpc_cuda->stream_create(&dv.stream[k]);
        if (qrc) {   /* (tried again at its first use: queue_open) */
            dv.stream[k] = NULL;
            dpc_log(DPC_LOG_ERROR, "cannot create a CUDA stream: %s", dpc_cuda->error_string(qrc));
        }
        all_streams[k] = dv.stream[k];
    }
    __atomic_store_n(&streams_made, true, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&streams_lock);
    return 0;
}

int dpc_cuda_order_after_user(MPI_Comm comm, const char *call, dpc_order_t which)
{
    int rc = __atomic_load_n(&streams_made, __ATOMIC_ACQUIRE) ? 0 : queue_streams();
    if (rc)
        return dpc_raise(comm, MPI_ERR_OTHER, "%s: cannot create a CUDA stream: %s", call,
                         dpc_cuda->error_string(rc));
    /* only the streams the call will use: each wait costs a driver call */
    rc = which == DPC_ORDER_STAGING ? dpc_cuda->order_after_user(&all_streams[NQUEUE], 1)
                                        : dpc_cuda->order_after_user(all_streams, NQUEUE);
    return rc ? dpc_raise(comm, MPI_ERR_OTHER, "%s: cannot order the copies of device buffers "
                          "after the program's work on the default stream: %s", call,
                          dpc_cuda->error_string(rc))
              : MPI_SUCCESS;
}

/* The queue's stream and a slot for its next event (rc != 0: logged). */
static dpc_status_t queue_open(int queue, void **ev)
{
    int rc;
    if (!dv.stream[queue]) {   /* (one queue_streams could not make) */
        if ((rc = dpc_cuda->stream_create(&dv.stream[queue]))) {
            dv.stream[queue] = NULL;
            dpc_log(DPC_LOG_ERROR, "cannot create a CUDA stream: %s", dpc_cuda->error_string(rc));
            return DPC_ERR_TRANSPORT;
        }
        all_streams[queue] = dv.stream[queue];
    }
    if (dv.tail[queue] == dv.cap[queue]) {
        int ncap = dv.cap[queue] ? 2 * dv.cap[queue] : 64;
        pend_t *n = realloc(dv.q[queue], sizeof(pend_t) * (size_t)ncap);
        if (!n)
            return DPC_ERR_NOMEM;
        dv.q[queue] = n;
        dv.cap[queue] = ncap;
    }
    *ev = dv.nspare ? dv.spare_ev[--dv.nspare] : NULL;
    if (!*ev && (rc = dpc_cuda->event_create(ev))) {
        dpc_log(DPC_LOG_ERROR, "cannot create a CUDA event: %s", dpc_cuda->error_string(rc));
        return DPC_ERR_TRANSPORT;
    }
    return DPC_OK;
}

/* Work was enqueued (rc: how that went): its event after it. */
static dpc_status_t queue_push(int queue, void *ev, int rc, dpc_xfer_cb_t cb, void *arg)
{
    if (rc || (rc = dpc_cuda->event_record(ev, dv.stream[queue]))) {
        dpc_log(DPC_LOG_ERROR, "%s: %s", queue_what[queue], dpc_cuda->error_string(rc));
        dpc_cuda->event_destroy(ev);
        return DPC_ERR_TRANSPORT;
    }
    dv.q[queue][dv.tail[queue]++] = (pend_t){ev, cb, arg};
    return DPC_OK;
}

static dpc_status_t dev_copy(void *ctx, void *dst, const void *src, size_t bytes, int queue,
                             dpc_xfer_cb_t cb, void *arg)
{
    (void)ctx;
    void *ev;
    dpc_status_t st = queue_open(queue, &ev);
    if (st != DPC_OK)
        return st;
    return queue_push(queue, ev, dpc_cuda->copy_async(dst, src, bytes, dv.stream[queue]), cb, arg);
}

static dpc_status_t dev_reduce(void *ctx, void *dst, const void *a, const void *b, size_t count,
                               dpc_dtype_t dt, dpc_op_t op, dpc_xfer_cb_t cb, void *arg)
{
    (void)ctx;
    void *ev;
    dpc_status_t st = queue_open(Q_REDUCE, &ev);
    if (st != DPC_OK)
        return st;
    return queue_push(Q_REDUCE, ev, dpc_cuda->reduce_async(dst, a, b, count, (int)dt, (int)op,
                                                           dv.stream[Q_REDUCE]), cb, arg);
}

bool dpc_cuda_can_reduce(dpc_dtype_t dt, dpc_op_t op)
{
    /* a zero-length launch enqueues nothing and says whether a kernel exists */
    return dpc_cuda && dpc_cuda->reduce_async(NULL, NULL, NULL, 0, (int)dt, (int)op, NULL) == 0;
}

static void spare_event(void *ev)
{
    if (dv.nspare == dv.capspare) {
        int ncap = dv.capspare ? 2 * dv.capspare : 64;
        void **n = realloc(dv.spare_ev, sizeof(void *) * (size_t)ncap);
        if (!n) {
            dpc_cuda->event_destroy(ev);
            return;
        }
        dv.spare_ev = n;
        dv.capspare = ncap;
    }
    dv.spare_ev[dv.nspare++] = ev;
}

static int dev_progress(void *ctx)
{
    (void)ctx;
    int n = 0;
    for (int k = 0; k < NQUEUE; k++) {
        while (dv.head[k] < dv.tail[k]) {
            pend_t *p = &dv.q[k][dv.head[k]];
            int rc = dpc_cuda->event_query(p->ev);
            if (rc == 1)
                break;       /* the stream is in order: later ones are not done either */
            if (rc)
                dpc_log(DPC_LOG_ERROR, "%s: %s", queue_what[k], dpc_cuda->error_string(rc));
            dv.head[k]++;
            spare_event(p->ev);
            p->cb(p->arg, rc ? DPC_ERR_TRANSPORT : DPC_OK);
            n++;
        }
        if (dv.head[k] == dv.tail[k])
            dv.head[k] = dv.tail[k] = 0;
    }
    return n;
}

const dpc_device_ops_t dpc_cuda_device_ops = {.copy = dev_copy, .progress = dev_progress,
                                              .reduce = dev_reduce};

void dpc_cuda_fini(void)
{
    if (!dpc_cuda)
        return;
    dpc_ipc_fini();
    for (int k = 0; k < NQUEUE; k++) {
        if (dv.stream[k]) {
            dpc_cuda->stream_sync(dv.stream[k]);
            dpc_cuda->stream_destroy(dv.stream[k]);
        }
        free(dv.q[k]);
    }
    for (int i = 0; i < dv.nspare; i++)
        dpc_cuda->event_destroy(dv.spare_ev[i]);
    free(dv.spare_ev);
    if (stream) {
        dpc_cuda->stream_sync(stream);
        dpc_cuda->stream_destroy(stream);
        stream = NULL;
    }
    streams_made = false;
    memset(&dv, 0, sizeof(dv));
    memset(all_streams, 0, sizeof(all_streams));
    pinned_fini();
}

void dpc_pipe_release(dpc_pipe_t *pp)
{
    if (dpc_cuda) {
        pinned_put(pp->host_in);
        pinned_put(pp->host_out);
        pinned_put(pp->slots);
    }
    pp->host_in = pp->host_out = pp->slots = NULL;
}

int dpc_pipe_alloc(dpc_pipe_t *pp, size_t in_bytes, size_t out_bytes, size_t slot_bytes)
{
    char **dst[3] = {&pp->host_in, &pp->host_out, &pp->slots};
    bool want[3] = {pp->dev_in && in_bytes, pp->dev_out && out_bytes, pp->dev_reduce};
    size_t len[3] = {in_bytes, out_bytes, slot_bytes};
    pp->host_in = pp->host_out = pp->slots = NULL;
    for (int i = 0; i < 3; i++) {
        void *p = NULL;
        if (want[i] && pinned_get(&p, len[i])) {
            dpc_pipe_release(pp);    /* (what a failed allocation left in p is not ours) */
            return -1;
        }
        *dst[i] = p;
    }
    return 0;
}
