/* Shared-memory mailboxes (see dpc_shm.h). */
#include "config.h"
#include "dpc_shm.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "dpc_copy.h"

#define LINE 64
#define HDR_BYTES 24u                  /* record header: stamp, tag, length, kind */
/* a record's kind: the caller's (DPC_SHM_MSG...), or this pad, internal */
#define KIND_PAD 0xffffffffu

/* Only the consumer's position is shared: the producer keeps its own
 * (dpc_shm_t.sent) and publishes each record through the record's own
 * stamp, so a small message costs one cache line to hand over (its header
 * and payload), and the consumer's position is read back only when the ring
 * looks full from what the producer saw last. */
typedef struct ring_ctl {
    uint64_t tail;                     /* bytes consumed (the consumer's) */
    char pad1[LINE - 8];
} ring_ctl_t;

typedef struct seg_hdr {
    uint32_t magic, nprocs;
    uint64_t ring_bytes;
    char pad0[LINE - 16];
    uint32_t sleeping;                 /* the owner sleeps: ring it */
    char pad1[LINE - 4];
} seg_hdr_t;

/* stamp: the record's position in the ring's byte stream, plus one, stored
 * last (release): the consumer expecting a record at position t waits for
 * stamp t + 1; a stale record there (an earlier lap) has another stamp. */
typedef struct rec_hdr { uint64_t stamp, tag; uint32_t len, kind; } rec_hdr_t;

#define SEG_MAGIC 0x64706d62u          /* "dpmb" */
#define RING_MIN (64u * 1024u)
#define RING_MAX (512u * 1024u)
#define SEG_BUDGET (8u * 1024u * 1024u)

struct dpc_shm {
    int nprocs, me;
    size_t ring_bytes;                 /* each ring's (a power of two) */
    char name[128];
    bool linked;
    size_t seg_bytes;
    char **segs;                       /* every process's segment, mapped */
    uint64_t *sent;                    /* per destination: bytes we have written there */
    uint64_t *seen_tail;               /* per destination: its consumer's position, as last read */
};

size_t dpc_shm_ring_bytes(int nprocs)
{
    size_t b = RING_MAX;
    while (b > RING_MIN && (size_t)nprocs * b > SEG_BUDGET)
        b /= 2;
    return b;
}

size_t dpc_shm_max_msg(int nprocs)
{
    size_t eighth = dpc_shm_ring_bytes(nprocs) / 8;
    return eighth < DPC_SHM_MAX_MSG ? eighth : DPC_SHM_MAX_MSG;
}

/* Segments within the budget: prefaulted (see prefault). */
static bool small_segments(const dpc_shm_t *s)
{
    return (size_t)s->nprocs * s->ring_bytes <= SEG_BUDGET;
}

/* Writes to every page of [p, p + len) once, changing nothing: an atomic
 * add of zero, which keeps whatever a peer writes there meanwhile. Mapping
 * the pages is not enough: on a VM (this project's 2-core machines) the
 * first write to each page of a mapping costs about 4 us even after
 * MAP_POPULATE or MADV_POPULATE_WRITE (no page fault the guest sees: the
 * hypervisor's), so a ring's first lap ran at about 2 ns a byte, 40 times
 * its speed once warm (a 2 KiB bcast at 2 ranks: 4.3-5.3 us a call for its
 * first 200 calls, 0.2-0.4 after; collectives_tour showed it as 0.27x
 * MPICH). One write per page takes that cost at setup instead: about
 * 0.5 ms per 512 KiB ring. */
static void touch_pages(char *p, size_t len)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)p & ~(pg - 1), hi = (uintptr_t)p + len;
    for (uintptr_t a = lo; a < hi; a += pg)
        __atomic_fetch_add((uint64_t *)a, 0, __ATOMIC_RELAXED);
}

static size_t ring_stride(const dpc_shm_t *s)
{
    return sizeof(ring_ctl_t) + s->ring_bytes;
}

static size_t seg_size(const dpc_shm_t *s)
{
    return sizeof(seg_hdr_t) + (size_t)s->nprocs * ring_stride(s);
}

/* Ring of sender src in process owner's segment. */
static ring_ctl_t *ring(const dpc_shm_t *s, int owner, int src)
{
    return (ring_ctl_t *)(s->segs[owner] + sizeof(seg_hdr_t) + (size_t)src * ring_stride(s));
}

static char *ring_data(ring_ctl_t *r)
{
    return (char *)(r + 1);
}

static seg_hdr_t *hdr(const dpc_shm_t *s, int owner)
{
    return (seg_hdr_t *)s->segs[owner];
}

static void seg_name(const dpc_shm_t *s, int proc, char *buf, size_t len)
{
    snprintf(buf, len, "%s.%d", s->name, proc);
}

dpc_status_t dpc_shm_create(const char *prefix, int nprocs, int me, dpc_shm_t **shm_p,
                            char *err, size_t errlen)
{
    if (nprocs < 1 || nprocs > DPC_SHM_MAX_PROCS || me < 0 || me >= nprocs) {
        snprintf(err, errlen, "shared-memory mailboxes: %d processes (at most %d)", nprocs,
                 DPC_SHM_MAX_PROCS);
        return DPC_ERR_ARG;
    }
    dpc_shm_t *s = calloc(1, sizeof(*s));
    if (!s || !(s->segs = calloc((size_t)nprocs, sizeof(char *))) ||
        !(s->sent = calloc((size_t)nprocs, sizeof(uint64_t))) ||
        !(s->seen_tail = calloc((size_t)nprocs, sizeof(uint64_t)))) {
        dpc_shm_destroy(s);
        return DPC_ERR_NOMEM;
    }
    s->nprocs = nprocs;
    s->me = me;
    s->ring_bytes = dpc_shm_ring_bytes(nprocs);
    s->seg_bytes = seg_size(s);
    snprintf(s->name, sizeof(s->name), "%s", prefix);
    char nm[160];
    seg_name(s, me, nm, sizeof(nm));
    /* (a name that exists is another's: never taken over) */
    int fd = shm_open(nm, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)s->seg_bytes) != 0) {
        snprintf(err, errlen, "shared-memory mailbox %s: %s", nm, strerror(errno));
        if (fd >= 0) {
            close(fd);
            shm_unlink(nm);
        }
        dpc_shm_destroy(s);
        return DPC_ERR_TRANSPORT;
    }
    s->linked = true;
    /* (MAP_POPULATE and then touch_pages both: the first maps every page in
     * one system call, where the second alone would take a page fault per
     * page; the second pays what the first leaves, the first write. A
     * 1 MiB segment on the session-16 VM: 0.3 ms mapping + 1.3-1.4 ms
     * writing, against 3.2 ms writing with 256 faults) */
    void *p = mmap(NULL, s->seg_bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | (small_segments(s) ? MAP_POPULATE : 0), fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "shared-memory mailbox %s: mmap: %s", nm, strerror(errno));
        dpc_shm_destroy(s);
        return DPC_ERR_TRANSPORT;
    }
    s->segs[me] = p;
    if (small_segments(s))
        touch_pages(p, s->seg_bytes);
    /* (a fresh file reads as zeros: every ring empty, nobody asleep) */
    hdr(s, me)->nprocs = (uint32_t)nprocs;
    hdr(s, me)->ring_bytes = s->ring_bytes;
    __atomic_store_n(&hdr(s, me)->magic, SEG_MAGIC, __ATOMIC_RELEASE);
    *shm_p = s;
    return DPC_OK;
}

/* Our ring in process `owner`'s segment, its pages mapped and written once
 * now rather than at the first lap (touch_pages; a fresh 512 KiB ring also
 * costs 128 page faults a side where the kernel has not mapped it: a 2-rank
 * allreduce of 4 KiB measured 5 us a call, against 1.3 once warm, for its
 * first 30-odd calls). The owner's side: its whole segment at create. Only
 * where a segment is within SEG_BUDGET: then the memory made resident is
 * at most SEG_BUDGET per process (its own segment, whose rings its peers
 * write into). */
static void prefault(const dpc_shm_t *s, int owner)
{
    if (small_segments(s))
        touch_pages((char *)ring(s, owner, s->me), ring_stride(s));
}

dpc_status_t dpc_shm_attach(dpc_shm_t *s, char *err, size_t errlen)
{
    for (int i = 0; i < s->nprocs; i++) {
        if (s->segs[i])
            continue;
        char nm[160];
        seg_name(s, i, nm, sizeof(nm));
        int fd = shm_open(nm, O_RDWR, 0);
        void *p = fd < 0 ? MAP_FAILED
                         : mmap(NULL, s->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (p == MAP_FAILED) {
            snprintf(err, errlen, "shared-memory mailbox %s: %s", nm, strerror(e));
            return DPC_ERR_TRANSPORT;
        }
        s->segs[i] = p;
        const seg_hdr_t *h = p;
        if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != SEG_MAGIC ||
            h->nprocs != (uint32_t)s->nprocs || h->ring_bytes != s->ring_bytes) {
            snprintf(err, errlen, "shared-memory mailbox %s is not this job's", nm);
            return DPC_ERR_TRANSPORT;
        }
        prefault(s, i);      /* (only a segment of this job's size) */
    }
    return DPC_OK;
}

void dpc_shm_unlink(dpc_shm_t *s)
{
    if (s && s->linked) {
        char nm[160];
        seg_name(s, s->me, nm, sizeof(nm));
        shm_unlink(nm);
        s->linked = false;
    }
}

void dpc_shm_destroy(dpc_shm_t *s)
{
    if (!s)
        return;
    dpc_shm_unlink(s);
    for (int i = 0; s->segs && i < s->nprocs; i++)
        if (s->segs[i])
            munmap(s->segs[i], s->seg_bytes);
    free(s->segs);
    free(s->sent);
    free(s->seen_tail);
    free(s);
}

/* Where a record's payload starts: right after the header for small ones
 * (one cache line holds an 8-byte message whole), on the next line for
 * larger ones (a 2 KiB allgather at 2 ranks: 0.80 -> 0.72 us per exchange
 * of two raw rings). */
static size_t payload_off(size_t len)
{
    return len >= DPC_SHM_ALIGNED_FROM ? LINE : HDR_BYTES;
}

static size_t rec_bytes(size_t len)
{
    return (payload_off(len) + len + LINE - 1) & ~(size_t)(LINE - 1);
}

/* The pad a record of need bytes at our position in dst's ring needs
 * first, when it would cross the ring's end. */
static size_t pad_before(const dpc_shm_t *s, int dst, size_t need)
{
    size_t rb = s->ring_bytes, at = (size_t)(s->sent[dst] & (rb - 1));
    return at + need > rb ? rb - at : 0;
}

/* Room for bytes more at our position in dst's ring. The tail we saw last
 * is looked at again only when that is short. */
static bool fits(dpc_shm_t *s, int dst, size_t bytes)
{
    uint64_t head = s->sent[dst];
    if (head + bytes - s->seen_tail[dst] <= s->ring_bytes)
        return true;
    s->seen_tail[dst] = __atomic_load_n(&ring(s, dst, s->me)->tail, __ATOMIC_ACQUIRE);
    return head + bytes - s->seen_tail[dst] <= s->ring_bytes;
}

bool dpc_shm_room(dpc_shm_t *s, int dst, size_t len)
{
    size_t need = rec_bytes(len);
    return fits(s, dst, pad_before(s, dst, need) + need);
}

static bool streaming;

void dpc_shm_set_streaming(bool on)
{
    streaming = on;
}

int dpc_shm_put(dpc_shm_t *s, int dst, uint64_t tag, unsigned kind, const void *buf, size_t len)
{
    ring_ctl_t *r = ring(s, dst, s->me);
    uint64_t head = s->sent[dst];
    size_t at = (size_t)(head & (s->ring_bytes - 1)), need = rec_bytes(len);
    size_t pad = pad_before(s, dst, need);
    if (!fits(s, dst, pad + need))
        return -1;
    char *d = ring_data(r);
    if (pad) {
        rec_hdr_t *ph = (rec_hdr_t *)(d + at);
        ph->kind = KIND_PAD;
        __atomic_store_n(&ph->stamp, head + 1, __ATOMIC_RELEASE);
        head += pad;
        at = 0;
    }
    rec_hdr_t *h = (rec_hdr_t *)(d + at);
    h->tag = tag;
    h->len = (uint32_t)len;
    h->kind = kind;
    /* (small records, the latency path, keep an inline memcpy; streamed
     * stores are weakly ordered, and dpc_copy fences them before it
     * returns, so they are seen before the stamp below) */
    if (streaming && len >= DPC_SHM_STREAM_FROM)
        dpc_copy((char *)h + payload_off(len), buf, len, 1);
    else if (len)
        memcpy((char *)h + payload_off(len), buf, len);
    __atomic_store_n(&h->stamp, head + 1, __ATOMIC_RELEASE);
    s->sent[dst] = head + need;
    /* published, then: is the owner asleep? Its flag goes up before its
     * last look at the rings. Without a full fence here our load may pass
     * our stamp's store, and a record published in the instant the owner
     * goes to sleep can go unnoticed until its sleep times out: every sleep
     * of this library is bounded (1 ms). The fence would cost more than the
     * rest of a small message (it waits for the record's cache lines to
     * reach the owner's core), on every message, for a rare millisecond. */
    seg_hdr_t *o = hdr(s, dst);
    uint32_t one = 1;
    if (__atomic_load_n(&o->sleeping, __ATOMIC_RELAXED) &&
        __atomic_compare_exchange_n(&o->sleeping, &one, 0, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED))
        return 1;
    return 0;
}

/* The record at the consumer's position, if it has been published. */
static const rec_hdr_t *next_rec(const dpc_shm_t *s, ring_ctl_t *r, uint64_t tail, int order)
{
    const rec_hdr_t *h = (const rec_hdr_t *)(ring_data(r) + (tail & (s->ring_bytes - 1)));
    return __atomic_load_n(&h->stamp, order) == tail + 1 ? h : NULL;
}

bool dpc_shm_peek(dpc_shm_t *s, int src, uint64_t *tag, unsigned *kind, const void **data,
                  size_t *len)
{
    ring_ctl_t *r = ring(s, s->me, src);
    uint64_t tail = r->tail;            /* ours alone */
    const rec_hdr_t *h;
    while ((h = next_rec(s, r, tail, __ATOMIC_ACQUIRE)) != NULL) {
        if (h->kind == KIND_PAD) {
            tail += s->ring_bytes - (tail & (s->ring_bytes - 1));
            __atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
            continue;
        }
        *tag = h->tag;
        *kind = h->kind;
        *len = h->len;
        *data = (const char *)h + payload_off(h->len);
        return true;
    }
    /* Nothing yet: fetch the line after the one we poll as well. A record
     * of more than one line (over 40 bytes of payload) is written before
     * its stamp, so a copy of its second line fetched alongside the stamp
     * that shows it is mostly new already; without this the reader took
     * the two lines one after the other, two trips between the cores
     * (2 ranks, slow spells of the reference VM: bcast 64 B 0.70 -> 0.55-0.60
     * us, 8 B unchanged at 0.53-0.58). */
    __builtin_prefetch(ring_data(r) + ((tail + 64) & (s->ring_bytes - 1)));
    return false;
}

void dpc_shm_pop(dpc_shm_t *s, int src)
{
    ring_ctl_t *r = ring(s, s->me, src);
    const rec_hdr_t *h = (const rec_hdr_t *)(ring_data(r) + (r->tail & (s->ring_bytes - 1)));
    __atomic_store_n(&r->tail, r->tail + rec_bytes(h->len), __ATOMIC_RELEASE);
}

bool dpc_shm_pending(dpc_shm_t *s)
{
    for (int i = 0; i < s->nprocs; i++) {
        ring_ctl_t *r = ring(s, s->me, i);
        if (next_rec(s, r, r->tail, __ATOMIC_SEQ_CST))
            return true;
    }
    return false;
}

bool dpc_shm_sleep_begin(dpc_shm_t *s)
{
    __atomic_store_n(&hdr(s, s->me)->sleeping, 1, __ATOMIC_SEQ_CST);
    if (dpc_shm_pending(s)) {
        __atomic_store_n(&hdr(s, s->me)->sleeping, 0, __ATOMIC_RELAXED);
        return false;
    }
    return true;
}

void dpc_shm_sleep_end(dpc_shm_t *s)
{
    __atomic_store_n(&hdr(s, s->me)->sleeping, 0, __ATOMIC_RELAXED);
}

int dpc_shm_nprocs(const dpc_shm_t *s)
{
    return s->nprocs;
}
