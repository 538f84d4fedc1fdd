/*
 * A stand-in for libdpcoll_cuda.so on machines without a GPU: "device
 * memory" is an arena of this process's address space kept inaccessible
 * (PROT_NONE) except inside this plugin's own copies. So any host code of
 * libdpcoll that dereferenced a device pointer would crash the test, and
 * the staging path runs for real. Tests load it with DPCOLL_CUDA_PLUGIN and
 * allocate/copy with fake_dev_alloc/fake_dev_copy.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "dpc_cuda.h"

#define ARENA (1u << 30)          /* reserved address space, not memory */
static char *arena;
static size_t used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long copies;

static void setup(void)
{
    if (!arena) {
        arena = mmap(NULL, ARENA, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (arena == MAP_FAILED) {
            perror("fake device arena");
            abort();
        }
    }
}

__attribute__((visibility("default"))) void *fake_dev_alloc(size_t n)
{
    pthread_mutex_lock(&lock);
    setup();
    size_t at = used;
    used += (n + 4095) & ~(size_t)4095;
    if (used > ARENA)
        abort();
    pthread_mutex_unlock(&lock);
    return arena + at;
}

/* Copies with the arena opened for the duration (any direction); the test's
 * own (fake_dev_copy) are not counted, libdpcoll's (copy_async) are. */
__attribute__((visibility("default"))) void fake_dev_copy(void *dst, const void *src, size_t n)
{
    pthread_mutex_lock(&lock);
    mprotect(arena, used, PROT_READ | PROT_WRITE);
    memmove(dst, src, n);
    mprotect(arena, used, PROT_NONE);
    pthread_mutex_unlock(&lock);
}

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

static int is_device(const void *p)
{
    return arena && (const char *)p >= arena && (const char *)p < arena + ARENA;
}

/* A stream queues its copies and does them only when synchronized, or when
 * an event recorded after them is polled the second time: so a caller
 * that uses a copy's destination before the copy is reported done reads
 * stale data, as it would on a GPU. */
typedef struct fcopy { void *dst; const void *src; size_t n; } fcopy_t;
typedef struct fstream { fcopy_t q[4096]; int head, tail; } fstream_t;
typedef struct fevent { fstream_t *s; int upto, polls; } fevent_t;

static void run_until(fstream_t *s, int upto)
{
    while (s->head < upto) {
        fcopy_t *c = &s->q[s->head++ % 4096];
        fake_dev_copy(c->dst, c->src, c->n);
    }
}

static int stream_create(void **s)
{
    *s = calloc(1, sizeof(fstream_t));
    return *s ? 0 : 2;
}
static void stream_destroy(void *s) { free(s); }
static int stream_sync(void *s)
{
    fstream_t *f = s;
    run_until(f, f->tail);
    return 0;
}
static int copy_async(void *dst, const void *src, size_t n, void *s)
{
    fstream_t *f = s;
    if (f->tail - f->head >= 4096)
        run_until(f, f->head + 1);     /* full: the oldest is done by now */
    f->q[f->tail++ % 4096] = (fcopy_t){dst, src, n};
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
    e->s = s;
    e->upto = e->s->tail;
    e->polls = 0;
    return 0;
}
static int event_query(void *ev)
{
    fevent_t *e = ev;
    if (e->s->head >= e->upto)
        return 0;
    if (++e->polls < 2)
        return 1;
    run_until(e->s, e->upto);
    return 0;
}
static int reduce_async(void *d, const void *a, const void *b, size_t n, int dt, int op, void *s)
{
    (void)d; (void)a; (void)b; (void)n; (void)dt; (void)op; (void)s;
    return -1;
}
static int host_alloc(void **p, size_t n) { *p = malloc(n ? n : 1); return *p ? 0 : 2; }
static void host_free(void *p) { free(p); }
static const char *error_string(int e) { return e == -1 ? "no fake kernel" : "fake error"; }

static const dpc_cuda_plugin_t plugin = {
    .version = DPC_CUDA_PLUGIN_VERSION, .init = init, .is_device = is_device,
    .stream_create = stream_create, .stream_destroy = stream_destroy, .stream_sync = stream_sync,
    .copy_async = copy_async, .reduce_async = reduce_async, .host_alloc = host_alloc,
    .host_free = host_free, .error_string = error_string,
    .event_create = event_create, .event_destroy = event_destroy,
    .event_record = event_record, .event_query = event_query,
};

__attribute__((visibility("default"))) const dpc_cuda_plugin_t *dpc_cuda_plugin_get(int version)
{
    return version == DPC_CUDA_PLUGIN_VERSION ? &plugin : NULL;
}
