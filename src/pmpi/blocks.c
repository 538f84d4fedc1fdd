#include "config.h"
#include "blocks.h"
#include <stdlib.h>
#include <string.h>

static int cnt(const int *counts, int count, int i) { return counts ? counts[i] : count; }
/* displacement of block i in elements; without displs, blocks of `count`
 * elements follow each other */
static MPI_Aint disp(const int *displs, const int *counts, int count, int i)
{
    (void)counts;
    return displs ? displs[i] : (MPI_Aint)i * count;
}

int dpc_blocks_make(dpc_blocks_t *b, void *buf, int n, const int *counts, int count,
                    const int *displs, MPI_Datatype dt, const dpc_dtinfo_t *ti, int fill,
                    int only_rank, MPI_Comm comm)
{
    b->staging = NULL;
    b->total = 0;
    if (n <= DPC_BLOCKS_INLINE) {
        b->bytes = b->inline_bytes;
        b->displs = b->inline_displs;
    } else {
        b->bytes = malloc(sizeof(size_t) * (size_t)n);
        b->displs = malloc(sizeof(size_t) * (size_t)n);
    }
    if (!b->bytes || !b->displs)
        return MPI_ERR_NO_MEM;
    /* the blocks' bytes either way; contiguous, they are where the user put
     * them, else packed one after another in staging (displs redone below) */
    b->total = dpc_blocks_contig(b->bytes, b->displs, n, counts, count, displs, ti);
    if (ti->contig) {
        b->base = (char *)buf + ti->true_lb;
        return MPI_SUCCESS;
    }
    b->staging = malloc(b->total ? b->total : 1);
    if (!b->staging)
        return MPI_ERR_NO_MEM;
    b->base = b->staging;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        b->displs[i] = at;
        at += b->bytes[i];
    }
    for (int i = 0; fill && i < n; i++) {
        if ((only_rank >= 0 && i != only_rank) || !b->bytes[i])
            continue;
        int pos = 0;
        char *src = (char *)buf + disp(displs, counts, count, i) * ti->extent;
        int rc = PMPI_Pack(src, cnt(counts, count, i), dt, b->staging + b->displs[i],
                           (int)b->bytes[i], &pos, comm);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int dpc_blocks_unpack(const dpc_blocks_t *b, void *buf, int n, const int *counts, int count,
                      const int *displs, MPI_Datatype dt, const dpc_dtinfo_t *ti, int skip_rank,
                      MPI_Comm comm)
{
    if (!b->staging)
        return MPI_SUCCESS;
    for (int i = 0; i < n; i++) {
        if (i == skip_rank || !b->bytes[i])
            continue;
        int pos = 0;
        char *dst = (char *)buf + disp(displs, counts, count, i) * ti->extent;
        int rc = PMPI_Unpack(b->staging + b->displs[i], (int)b->bytes[i], &pos, dst,
                             cnt(counts, count, i), dt, comm);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

void dpc_blocks_free(dpc_blocks_t *b)
{
    /* (every small call frees two of these, mostly empty: no calls to
     * free(NULL), a few ns each) */
    if (b->bytes && b->bytes != b->inline_bytes)
        free(b->bytes);
    if (b->displs && b->displs != b->inline_displs)
        free(b->displs);
    if (b->staging)
        free(b->staging);
    b->bytes = b->displs = NULL;
    b->staging = NULL;
}
