/*
 * Copies for the schedules. A large copy (an allgather's or alltoall's own
 * block of 16 MiB) runs at memory's speed, and a plain store first reads
 * each destination line into the cache (the write-allocate), a third of
 * the memory traffic; non-temporal stores write whole lines without it.
 * glibc's memcpy switches to them only beyond a share of the last-level
 * cache it is told of, which on this VM is 480 MiB: never, for our sizes.
 * Measured here, one process: 16 MiB memcpy 9.2 GB/s, streaming 12.8 GB/s;
 * 64 MiB 8.4 and 12.3; at 1 MiB (in cache) memcpy 23 GB/s, streaming 5.9,
 * hence the threshold (DPC_STREAM_COPY_MIN). With two ranks copying at
 * once, an 8 MiB block gained nothing (allgather of 16 MiB: 1.05x MPICH
 * with memcpy, 1.00x streaming) and 16 MiB blocks did (allgather of
 * 32/64 MiB 1.12-1.16x -> 1.23-1.35x, alltoall 0.96-1.07x -> 1.11-1.19x,
 * same session, alternating runs). The copied data leave the caches: at
 * that size they would not have stayed anyway.
 *
 * SSE2 is part of x86-64, so no CPU check is needed; elsewhere memcpy.
 */
#include "config.h"
#include "dpc_copy.h"
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

void dpc_copy(void *dst, const void *src, size_t n, int streaming)
{
#if defined(__x86_64__)
    if (streaming && n >= 256) {
        char *d = dst;
        const char *s = src;
        /* the head, up to the destination's first 16-byte boundary */
        size_t head = (16 - ((uintptr_t)d & 15)) & 15;
        memcpy(d, s, head);
        d += head;
        s += head;
        n -= head;
        size_t body = n & ~(size_t)63;
        for (size_t i = 0; i < body; i += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
            __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
            _mm_stream_si128((__m128i *)(d + i), a);
            _mm_stream_si128((__m128i *)(d + i + 16), b);
            _mm_stream_si128((__m128i *)(d + i + 32), c);
            _mm_stream_si128((__m128i *)(d + i + 48), e);
        }
        /* the stores are weakly ordered: make them visible before anyone
         * is told the copy is done */
        _mm_sfence();
        memcpy(d + body, s + body, n - body);
        return;
    }
#endif
    (void)streaming;
    memcpy(dst, src, n);
}
