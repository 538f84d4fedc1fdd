/*
 * Huge pages for the large host buffers a program passes again and again.
 *
 * Why: on one node the data of large calls cross between processes by
 * cross-memory attach (process_vm_readv/writev, ucx_glue/dpc_cma.c), which
 * pins every page it touches and walks the page tables for each; with
 * 4 KiB pages that, not the copying, is most of the time. On this
 * project's VM (docs/bench/s42/hugepages.txt) a 2-rank direct allreduce of
 * 8 MiB done by hand took 1.87 ms on 4 KiB pages and 0.77-0.91 ms on 2 MiB
 * ones; in the library, 8-64 MiB allreduces ran 1.5-1.6x faster, bcasts
 * 1.2-1.6x, allgathers 1.2-1.5x.
 *
 * How: the kernel makes a range huge on request (madvise MADV_COLLAPSE,
 * Linux 6.1+: the same contents at the same addresses, copied into 2 MiB
 * pages) at a cost of about 2 ms per MiB here, once. So a range is made
 * huge the second time a call passes it (a buffer used once never pays),
 * only its whole 2 MiB pages (nothing beyond the program's buffer is
 * touched), never where the machine's administrator turned transparent
 * huge pages off (/sys/kernel/mm/transparent_hugepage/enabled: never), and
 * a refusal (no such advice, memory pinned or not anonymous) is the end of
 * it for that range. A range is asked for once: a buffer freed and another
 * allocated at the same place stays as the allocator made it. What a rank does with its own pages changes nothing
 * another rank decides. DPCOLL_HUGEPAGES=0 turns it off.
 */
#ifndef DPC_HUGEPAGE_H
#define DPC_HUGEPAGE_H

#include <stddef.h>

#define DPC_HUGEPAGE_BYTES ((size_t)2 << 20)
/* the sighting of a range at which it is made huge */
#define DPC_HUGEPAGE_AFTER 2u
/* ranges remembered (the least seen gives way to a new one) */
#define DPC_HUGEPAGE_SLOTS 64

typedef enum {
    DPC_HUGEPAGE_SMALL,      /* no whole 2 MiB page in it: nothing to do */
    DPC_HUGEPAGE_NOTED,      /* seen, not yet often enough */
    DPC_HUGEPAGE_MADE,       /* made huge now */
    DPC_HUGEPAGE_DONE,       /* made huge (or refused) before */
    DPC_HUGEPAGE_REFUSED,    /* the kernel said no now */
    DPC_HUGEPAGE_OFF         /* off: DPCOLL_HUGEPAGES=0, the administrator's "never",
                                or a kernel without the advice */
} dpc_hugepage_t;

/* A call passes host memory [p, p + bytes). Thread-safe. */
dpc_hugepage_t dpc_hugepage_note(const void *p, size_t bytes);
/* Off from now on (DPCOLL_HUGEPAGES=0), or on again where the machine
 * allows it; forgets the ranges seen. */
void dpc_hugepage_enable(int on);

#endif
