/*
 * Which of libdpcoll's persistent collectives is behind an MPI request
 * handle (persist.c): a hash table with linear probing, so that MPI_Start
 * and the completion calls find theirs, or learn that a request is not
 * ours, in constant time however many persistent requests are live. A
 * walk of every op made each request of an MPI_Startall of N cost O(N),
 * and every MPI_Test of an unrelated request too. Not thread safe: the
 * caller locks.
 */
#ifndef DPC_REQMAP_H
#define DPC_REQMAP_H

#include <mpi.h>
#include <stddef.h>

typedef struct dpc_reqmap {
    MPI_Request *keys;
    void **vals;         /* NULL: a free slot */
    size_t cap, n;       /* cap: a power of two (or 0), at least twice n */
} dpc_reqmap_t;

/* Maps req (not MPI_REQUEST_NULL) to val (not NULL), replacing what it
 * mapped to. 0, or -1 out of memory (the map unchanged). */
int dpc_reqmap_put(dpc_reqmap_t *m, MPI_Request req, void *val);
/* What req maps to, or NULL. */
void *dpc_reqmap_get(const dpc_reqmap_t *m, MPI_Request req);
/* req maps to nothing from now on. */
void dpc_reqmap_del(dpc_reqmap_t *m, MPI_Request req);
void dpc_reqmap_free(dpc_reqmap_t *m);

#endif
