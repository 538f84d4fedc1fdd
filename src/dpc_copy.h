/* Local copies of the schedules' COPY steps (dpc_copy.c). */
#ifndef DPC_COPY_H
#define DPC_COPY_H

#include <stddef.h>

/* From this many bytes a copy step writes around the caches (see
 * dpc_copy.c): the step's whole size decides, also when it runs in slices. */
#define DPC_STREAM_COPY_MIN (16u << 20)

/* n bytes from src to dst (not overlapping). streaming: write with
 * non-temporal stores, which skip reading the destination into the cache
 * first; otherwise memcpy. */
void dpc_copy(void *dst, const void *src, size_t n, int streaming);

#endif
