/* Per-rank blocks of the data-moving collectives as byte counts and byte
 * displacements into one contiguous buffer: the user's own buffer when its
 * datatype is contiguous, else a packed staging buffer in rank order. */
#ifndef DPC_BLOCKS_H
#define DPC_BLOCKS_H

#include "shim.h"

#define DPC_BLOCKS_INLINE 64
typedef struct dpc_blocks {
    size_t *bytes, *displs;   /* per rank, in bytes */
    size_t inline_bytes[DPC_BLOCKS_INLINE], inline_displs[DPC_BLOCKS_INLINE]; /* small p: no malloc */
    char *base;               /* where displs point into */
    char *staging;            /* malloc'ed when the datatype is not contiguous */
    size_t total;
} dpc_blocks_t;

/* Byte counts and byte displacements of n blocks of contiguous data
 * (counts NULL: `count` each; displs NULL: consecutive); returns the total.
 * dpc_blocks_make's contiguous case, and the short way's (dpc_movev_repeat),
 * which must describe the blocks exactly as the job would. */
static inline size_t dpc_blocks_contig(size_t *bytes, size_t *bdispls, int n, const int *counts,
                                       int count, const int *displs, const dpc_dtinfo_t *ti)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        bytes[i] = (size_t)(counts ? counts[i] : count) * (size_t)ti->size;
        bdispls[i] = (size_t)((displs ? (MPI_Aint)displs[i] : (MPI_Aint)i * count) * ti->extent);
        total += bytes[i];
    }
    return total;
}

/* Describe n blocks of counts[i] elements of dt at buf + displs[i] extents
 * (displs NULL: consecutive). With fill, a staging buffer is filled from the
 * user's blocks (only_rank >= 0: just that block). */
int dpc_blocks_make(dpc_blocks_t *b, void *buf, int n, const int *counts, int count,
                    const int *displs, MPI_Datatype dt, const dpc_dtinfo_t *ti, int fill,
                    int only_rank, MPI_Comm comm);
/* Copy staged blocks back to the user's buffer (no-op when contiguous). */
int dpc_blocks_unpack(const dpc_blocks_t *b, void *buf, int n, const int *counts, int count,
                      const int *displs, MPI_Datatype dt, const dpc_dtinfo_t *ti, int skip_rank,
                      MPI_Comm comm);
void dpc_blocks_free(dpc_blocks_t *b);

#endif
