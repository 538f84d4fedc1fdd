/*
 * A stand-in for libdpcoll_cuda.so on machines without a GPU: "device
 * memory" is an arena of this process's address space kept inaccessible
 * (PROT_NONE) except inside this plugin's own copies. So any host code of
 * libdpcoll that dereferenced a device pointer would crash the test, and
 * the staging path runs for real. Tests load it with DPCOLL_CUDA_PLUGIN and
 * allocate/copy with fake_dev_alloc/fake_dev_copy.
 *
 * CUDA IPC too: the arena is shared memory, a handle names one allocation
 * in it, and a peer process maps that allocation (ipc_open), which is then
 * device memory there as well; closing unmaps it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "dpc_cuda.h"
#include "dpc_reduce.h"
#include "dpc_types.h"

#define ARENA (1u << 30)          /* reserved address space, not memory */
static char *arena;
static int arena_fd = -1;
static size_t used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long copies;

/* The arena is shared memory (a memfd), so that another process of the job
 * can map it through CUDA IPC's stand-in (ipc_open: /proc/PID/fd/FD). */
static void setup(void)
{
    if (!arena) {
        arena_fd = memfd_create("fakedev", MFD_CLOEXEC);
        if (arena_fd < 0 || ftruncate(arena_fd, ARENA) != 0) {
            perror("fake device arena");
            abort();
        }
        arena = mmap(NULL, ARENA, PROT_NONE, MAP_SHARED | MAP_NORESERVE, arena_fd, 0);
        if (arena == MAP_FAILED) {
            perror("fake device arena");
            abort();
        }
    }
}

/* Allocations, in order (each page-aligned): an IPC handle names one, as
 * CUDA's does, so a buffer inside it is at an offset from its base. */
#define MAX_ALLOCS 4096
static size_t alloc_at[MAX_ALLOCS], alloc_len[MAX_ALLOCS];
static int nallocs;

__attribute__((visibility("default"))) void *fake_dev_alloc(size_t n)
{
    pthread_mutex_lock(&lock);
    setup();
    size_t at = used, len = (n + 4095) & ~(size_t)4095;
    used += len ? len : 4096;
    if (used > ARENA || nallocs == MAX_ALLOCS)
        abort();
    alloc_at[nallocs] = at;
    alloc_len[nallocs++] = len ? len : 4096;
    pthread_mutex_unlock(&lock);
    return arena + at;
}

/* Peers' arenas mapped here by ipc_open: device memory too. */
#define MAX_PEERS 1024
static char *peer[MAX_PEERS];
static size_t peer_len[MAX_PEERS];
static int npeers;
static unsigned long ipc_opens, ipc_gets;

__attribute__((visibility("default"))) unsigned long fake_dev_ipc_opens(void)
{
    return ipc_opens;
}

/* Handles asked for (each is a driver call on CUDA). */
__attribute__((visibility("default"))) unsigned long fake_dev_ipc_gets(void)
{
    return __atomic_load_n(&ipc_gets, __ATOMIC_RELAXED);
}

/* Peer allocations mapped here now (opened and not yet closed). */
__attribute__((visibility("default"))) int fake_dev_ipc_mapped(void)
{
    return npeers;
}

/* Device memory readable and writable for the duration of one piece of
 * plugin work (lock held), and locked away again after it. */
static void open_all(int prot)
{
    mprotect(arena, used, prot);
    for (int i = 0; i < npeers; i++)
        mprotect(peer[i], peer_len[i], prot);
}

/* A copy with the arena opened for the duration (any direction). */
static void copy_now(void *dst, const void *src, size_t n)
{
    pthread_mutex_lock(&lock);
    open_all(PROT_READ | PROT_WRITE);
    memmove(dst, src, n);
    open_all(PROT_NONE);
    pthread_mutex_unlock(&lock);
}

static int is_device(const void *p);

/*
 * The program's own copies (fake_dev_copy: the tests' cudaMemcpy) model
 * CUDA's default stream: a copy from host memory into device memory
 * returns once the source is taken (here: duplicated) but lands later,
 * when the next copy of the program runs (the default stream is in order)
 * or when a stream of libdpcoll's that was ordered after the program's
 * work (order_after_user) gets to that point. libdpcoll's own streams do
 * not wait for it otherwise, as
 * CUDA's non-blocking streams do not: a call that reads a device buffer
 * without ordering first reads what was there before. libdpcoll's copies
 * (copy_async) are counted, the program's are not.
 */
typedef struct landing { void *dst; void *src; size_t n; struct landing *next; } landing_t;
static landing_t *landing_first, **landing_last = &landing_first;
static pthread_mutex_t landing_lock = PTHREAD_MUTEX_INITIALIZER;

static void land_all(void)
{
    pthread_mutex_lock(&landing_lock);
    landing_t *l = landing_first;
    landing_first = NULL;
    landing_last = &landing_first;
    for (landing_t *next; l; l = next) {
        next = l->next;
        copy_now(l->dst, l->src, l->n);
        free(l->src);
        free(l);
    }
    pthread_mutex_unlock(&landing_lock);
}

__attribute__((visibility("default"))) void fake_dev_copy(void *dst, const void *src, size_t n)
{
    land_all();
    landing_t *l = is_device(dst) && !is_device(src) && n ? malloc(sizeof(*l)) : NULL;
    if (l && (l->src = malloc(n))) {
        memcpy(l->src, src, n);
        l->dst = dst;
        l->n = n;
        l->next = NULL;
        pthread_mutex_lock(&landing_lock);
        *landing_last = l;
        landing_last = &l->next;
        pthread_mutex_unlock(&landing_lock);
        return;
    }
    free(l);
    copy_now(dst, src, n);
}

static int order_after_user(void *const *streams, int n);

__attribute__((visibility("default"))) unsigned long fake_dev_copies(void)
{
    return copies;
}

static int init(char *why, size_t len)
{
    (void)why; (void)len;
    setup();
    return 1;
}

static int in_range(const char *a, size_t len, const void *p)
{
    return a && (const char *)p >= a && (const char *)p < a + len;
}

static int in_arena(const char *a, const void *p)
{
    return in_range(a, ARENA, p);
}

static int in_guard(const void *p);
static int is_device(const void *p)
{
    int yes = in_arena(arena, p);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < npeers && !yes; i++)
        yes = in_range(peer[i], peer_len[i], p);
    yes = yes || in_guard(p);
    pthread_mutex_unlock(&lock);
    return yes;
}

/* CUDA IPC's stand-in: a handle names one allocation of a process's arena
 * (its place and length there); the offset is from the allocation's start. */
typedef struct { uint64_t magic; int64_t pid, fd; uint64_t at, len; } fake_handle_t;
#define FAKE_MAGIC 0x46414b4544455631ull
_Static_assert(sizeof(fake_handle_t) <= DPC_IPC_HANDLE_BYTES, "handle size");

static int ipc_get(const void *ptr, void *handle, size_t *offset)
{
    __atomic_add_fetch(&ipc_gets, 1, __ATOMIC_RELAXED);
    if (!in_arena(arena, ptr))
        return 1;
    size_t at = (size_t)((const char *)ptr - arena);
    int a = -1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nallocs && a < 0; i++)
        if (at >= alloc_at[i] && at < alloc_at[i] + alloc_len[i])
            a = i;
    fake_handle_t h = {FAKE_MAGIC, (int64_t)getpid(), arena_fd, a >= 0 ? alloc_at[a] : 0,
                       a >= 0 ? alloc_len[a] : 0};
    pthread_mutex_unlock(&lock);
    if (a < 0)
        return 1;
    memset(handle, 0, DPC_IPC_HANDLE_BYTES);
    memcpy(handle, &h, sizeof(h));
    *offset = at - h.at;
    return 0;
}

static int ipc_open(const void *handle, void **base)
{
    fake_handle_t h;
    memcpy(&h, handle, sizeof(h));
    char path[64];
    snprintf(path, sizeof(path), "/proc/%lld/fd/%lld", (long long)h.pid, (long long)h.fd);
    int fd = h.magic == FAKE_MAGIC && h.pid != getpid() ? open(path, O_RDWR) : -1;
    if (fd < 0)
        return 1;
    char *p = mmap(NULL, h.len, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd, (off_t)h.at);
    close(fd);
    if (p == MAP_FAILED)
        return 1;
    pthread_mutex_lock(&lock);
    if (npeers == MAX_PEERS) {
        pthread_mutex_unlock(&lock);
        munmap(p, h.len);
        return 1;
    }
    peer_len[npeers] = h.len;
    peer[npeers++] = p;
    ipc_opens++;
    pthread_mutex_unlock(&lock);
    *base = p;
    return 0;
}

/* One fake GPU per node, or with DPCOLL_FAKE_GPUS=n, n of them, rank r's
 * (PMI_RANK, which the launcher sets) on GPU r % n. */
static int device_of(const void *ptr, char *id, size_t len)
{
    if (!is_device(ptr))
        return 1;
    const char *g = getenv("DPCOLL_FAKE_GPUS"), *r = getenv("PMI_RANK");
    int n = g ? atoi(g) : 1;
    snprintf(id, len, "fake-gpu-%d", n > 1 && r ? atoi(r) % n : 0);
    return 0;
}

/* Peer access between different fake GPUs only with DPCOLL_FAKE_P2P: 1,
 * between all (GPUs joined by NVLink), or a list of pairs "A-B,C-D" of GPU
 * numbers (both ways; a partial topology); without it, as between GPUs
 * without peer to peer, only copies may cross them. */
static int peer_access(const char *from, const char *to, int *yes)
{
    const char *p2p = getenv("DPCOLL_FAKE_P2P");
    int a = -1, b = -1;
    *yes = !strcmp(from, to) || (p2p && !strcmp(p2p, "1"));
    if (*yes || !p2p || sscanf(from, "fake-gpu-%d", &a) != 1 || sscanf(to, "fake-gpu-%d", &b) != 1)
        return 0;
    for (const char *s = p2p; s && *s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL) {
        int x, y;
        if (sscanf(s, "%d-%d", &x, &y) == 2 && ((x == a && y == b) || (x == b && y == a)))
            *yes = 1;
    }
    return 0;
}

static int ipc_close(void *base)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < npeers; i++)
        if (peer[i] == base) {
            munmap(base, peer_len[i]);
            npeers--;
            peer[i] = peer[npeers];
            peer_len[i] = peer_len[npeers];
            break;
        }
    pthread_mutex_unlock(&lock);
    return 0;
}

/* Pinned host memory (host_alloc): the only host memory a kernel may read
 * or write (a real GPU reads pinned memory through its mapping; pageable
 * memory it cannot reach), so the fake kernels refuse anything else. */
typedef struct { char *p; size_t n; } pinned_t;
static pinned_t *pinned;
static int npinned, cappinned;

static int is_pinned(const void *p, size_t n)
{
    int ok = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < npinned && !ok; i++)
        ok = (const char *)p >= pinned[i].p && (const char *)p + n <= pinned[i].p + pinned[i].n;
    pthread_mutex_unlock(&lock);
    return ok;
}

/* A stream queues its work (copies and reductions) and does it only when
 * synchronized, or when an event recorded after it is polled the second
 * time: so a caller that uses a result before it is reported done reads
 * stale data, as it would on a GPU. */
typedef struct fwork { void *dst; const void *a, *b; size_t n; int dt, op; } fwork_t;
#define COPY (-1)     /* dt of a copy */
#define LAND (-2)     /* dt of order_after_user's mark: the program's copies land */
/* (libdpcoll may queue work from several threads, as CUDA allows) */
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
typedef struct fstream { fwork_t q[4096]; int head, tail; } fstream_t;
typedef struct fevent { fstream_t *s; int upto, polls; } fevent_t;
static unsigned long reduces;

__attribute__((visibility("default"))) unsigned long fake_dev_reduces(void)
{
    return reduces;
}

static void run_until(fstream_t *s, int upto)
{
    while (s->head < upto) {
        fwork_t *w = &s->q[s->head++ % 4096];
        if (w->dt == LAND) {
            land_all();
            continue;
        }
        if (w->dt == COPY) {
            copy_now(w->dst, w->a, w->n);
            continue;
        }
        pthread_mutex_lock(&lock);
        open_all(PROT_READ | PROT_WRITE);
        dpc_reduce_host(w->dst, w->a, w->b, w->n, (dpc_dtype_t)w->dt, (dpc_op_t)w->op);
        open_all(PROT_NONE);
        pthread_mutex_unlock(&lock);
    }
}

static void enqueue(fstream_t *f, fwork_t w)
{
    if (f->tail - f->head >= 4096)
        run_until(f, f->head + 1);     /* full: the oldest is done by now */
    f->q[f->tail++ % 4096] = w;
}

/* Streams made so far: none may be made before the first call with a
 * device buffer (a real one would take a context on the default GPU). */
static int streams_made;
__attribute__((visibility("default"))) int fake_dev_streams(void)
{
    return streams_made;
}

static int stream_create(void **s)
{
    __atomic_add_fetch(&streams_made, 1, __ATOMIC_RELAXED);
    *s = calloc(1, sizeof(fstream_t));
    return *s ? 0 : 2;
}
static void stream_destroy(void *s) { free(s); }
static int stream_sync(void *s)
{
    fstream_t *f = s;
    pthread_mutex_lock(&qlock);
    run_until(f, f->tail);
    pthread_mutex_unlock(&qlock);
    return 0;
}
/* libdpcoll's streams wait for the program's work so far: its copies land
 * when the first of them gets there (not at once: a peer that reads this
 * rank's buffer before that reads what was there before) */
static int order_after_user(void *const *streams, int n)
{
    int marked = 0;
    pthread_mutex_lock(&qlock);
    for (int i = 0; i < n; i++)
        if (streams[i]) {
            enqueue(streams[i], (fwork_t){NULL, NULL, NULL, 0, LAND, 0});
            marked = 1;
        }
    pthread_mutex_unlock(&qlock);
    if (!marked)
        land_all();
    return 0;
}
static int copy_async(void *dst, const void *src, size_t n, void *s)
{
    if (!n)
        return 0;   /* as the real plugin: nothing queued (an event after it is a fence) */
    pthread_mutex_lock(&qlock);
    enqueue(s, (fwork_t){dst, src, NULL, n, COPY, 0});
    pthread_mutex_unlock(&qlock);
    __atomic_add_fetch(&copies, 1, __ATOMIC_RELAXED);
    return 0;
}
static int event_create(void **ev)
{
    *ev = calloc(1, sizeof(fevent_t));
    return *ev ? 0 : 2;
}
static void event_destroy(void *ev) { free(ev); }
static int event_record(void *ev, void *s)
{
    fevent_t *e = ev;
    pthread_mutex_lock(&qlock);
    e->s = s;
    e->upto = e->s->tail;
    e->polls = 0;
    pthread_mutex_unlock(&qlock);
    return 0;
}
static int event_query(void *ev)
{
    fevent_t *e = ev;
    int busy = 0;
    pthread_mutex_lock(&qlock);
    if (e->s->head < e->upto && ++e->polls < 2)
        busy = 1;
    else
        run_until(e->s, e->upto);
    pthread_mutex_unlock(&qlock);
    return busy;
}
/* The kernels of the real plugin exist for every pair but long double's:
 * the same here, with the host's arithmetic (which the real kernels match
 * bit for bit). n == 0 enqueues nothing: a probe. */
#define UNPINNED 3
/* A test arms a failure of the next real reduction (not a probe). */
static int fail_next_reduce;
__attribute__((visibility("default"))) void fake_dev_fail_next_reduce(void)
{
    __atomic_store_n(&fail_next_reduce, 1, __ATOMIC_RELAXED);
}

static int reduce_async(void *d, const void *a, const void *b, size_t n, int dt, int op, void *s)
{
    if (n && __atomic_exchange_n(&fail_next_reduce, 0, __ATOMIC_RELAXED))
        return 7;   /* "fake error" */
    if (dt == DPC_LONG_DOUBLE || dt == DPC_LONG_DOUBLE_INT || !dpc_op_valid(op, dt))
        return -1;
    if (n == 0)
        return 0;
    size_t bytes = n * dpc_dtype_size(dt);
    const void *p[3] = {d, a, b};
    for (int i = 0; i < 3; i++)
        if (!is_device(p[i]) && !is_pinned(p[i], bytes))
            return UNPINNED;
    pthread_mutex_lock(&qlock);
    enqueue(s, (fwork_t){d, a, b, n, dt, op});
    pthread_mutex_unlock(&qlock);
    __atomic_add_fetch(&reduces, 1, __ATOMIC_RELAXED);
    return 0;
}
static unsigned long host_allocs;
__attribute__((visibility("default"))) unsigned long fake_dev_host_allocs(void)
{
    return host_allocs;
}
/* Pinned blocks come right after device memory: one page of their own
 * mapping that is_device calls device (and the host cannot touch), as
 * memory next to a real pinned block may be (another process's mapped
 * buffer, say). A pointer a staged call computes before its block's start
 * (the block less its span's lower bound) then looks like device memory,
 * as it could on CUDA. */
#define GUARD 4096
static int in_guard(const void *p)
{
    for (int i = 0; i < npinned; i++)
        if (in_range((const char *)pinned[i].p - GUARD, GUARD, p))
            return 1;
    return 0;
}
static int host_alloc(void **p, size_t n)
{
    __atomic_add_fetch(&host_allocs, 1, __ATOMIC_RELAXED);
    char *m = mmap(NULL, GUARD + (n ? n : 1), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED)
        return 2;
    mprotect(m, GUARD, PROT_NONE);
    *p = m + GUARD;
    pthread_mutex_lock(&lock);
    if (npinned == cappinned) {
        int ncap = cappinned ? 2 * cappinned : 64;
        pinned_t *np = realloc(pinned, sizeof(pinned_t) * (size_t)ncap);
        if (!np)
            abort();
        pinned = np;
        cappinned = ncap;
    }
    pinned[npinned++] = (pinned_t){*p, n};
    pthread_mutex_unlock(&lock);
    return 0;
}
static void host_free(void *p)
{
    size_t n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < npinned; i++)
        if (pinned[i].p == p) {
            n = pinned[i].n;
            pinned[i] = pinned[--npinned];
            break;
        }
    pthread_mutex_unlock(&lock);
    if (p)
        munmap((char *)p - GUARD, GUARD + (n ? n : 1));
}
static const char *error_string(int e)
{
    return e == -1 ? "no fake kernel" : e == UNPINNED ? "kernel given host memory that is not "
           "pinned" : "fake error";
}

static const dpc_cuda_plugin_t plugin = {
    .version = DPC_CUDA_PLUGIN_VERSION, .init = init, .is_device = is_device,
    .stream_create = stream_create, .stream_destroy = stream_destroy, .stream_sync = stream_sync,
    .copy_async = copy_async, .reduce_async = reduce_async, .host_alloc = host_alloc,
    .host_free = host_free, .error_string = error_string,
    .event_create = event_create, .event_destroy = event_destroy,
    .event_record = event_record, .event_query = event_query,
    .order_after_user = order_after_user,
    .ipc_get = ipc_get, .ipc_open = ipc_open, .ipc_close = ipc_close, .device_of = device_of,
    .peer_access = peer_access,
};

__attribute__((visibility("default"))) const dpc_cuda_plugin_t *dpc_cuda_plugin_get(int version)
{
    return version == DPC_CUDA_PLUGIN_VERSION ? &plugin : NULL;
}
