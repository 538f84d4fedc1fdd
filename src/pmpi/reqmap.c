/* The request map (reqmap.h). */
#include "config.h"
#include "reqmap.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MIN_CAP 64

/* MPICH's handles are a kind in the high bits over an index: a
 * multiplicative hash spreads consecutive ones over the table. */
static size_t slot_of(MPI_Request req, size_t cap)
{
    uint64_t x = 0;
    memcpy(&x, &req, sizeof(req) < sizeof(x) ? sizeof(req) : sizeof(x));
    x *= UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(x >> 32) & (cap - 1);
}

/* The slot of req, or the free slot where it would go. */
static size_t probe(const dpc_reqmap_t *m, MPI_Request req)
{
    size_t i = slot_of(req, m->cap);
    while (m->vals[i] && m->keys[i] != req)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int grow(dpc_reqmap_t *m)
{
    size_t cap = m->cap ? 2 * m->cap : MIN_CAP;
    dpc_reqmap_t g = {.keys = malloc(cap * sizeof(MPI_Request)),
                      .vals = calloc(cap, sizeof(void *)), .cap = cap};
    if (!g.keys || !g.vals) {
        free(g.keys);
        free(g.vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->vals[i]) {
            size_t j = probe(&g, m->keys[i]);
            g.keys[j] = m->keys[i];
            g.vals[j] = m->vals[i];
            g.n++;
        }
    dpc_reqmap_free(m);
    *m = g;
    return 0;
}

int dpc_reqmap_put(dpc_reqmap_t *m, MPI_Request req, void *val)
{
    if (2 * (m->n + 1) > m->cap && grow(m))
        return -1;
    size_t i = probe(m, req);
    if (!m->vals[i])
        m->n++;
    m->keys[i] = req;
    m->vals[i] = val;
    return 0;
}

void *dpc_reqmap_get(const dpc_reqmap_t *m, MPI_Request req)
{
    if (!m->n)
        return NULL;
    return m->vals[probe(m, req)];
}

void dpc_reqmap_del(dpc_reqmap_t *m, MPI_Request req)
{
    if (!m->n)
        return;
    size_t mask = m->cap - 1, i = probe(m, req);
    if (!m->vals[i])
        return;
    m->vals[i] = NULL;
    m->n--;
    /* Close the gap: a later entry of the same run whose home slot is not
     * cyclically within (i, j] moves back into it, or a lookup would stop
     * at the gap before reaching it. */
    for (size_t j = (i + 1) & mask; m->vals[j]; j = (j + 1) & mask) {
        size_t home = slot_of(m->keys[j], m->cap);
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (stays)
            continue;
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        m->vals[j] = NULL;
        i = j;
    }
}

void dpc_reqmap_free(dpc_reqmap_t *m)
{
    free(m->keys);
    free(m->vals);
    *m = (dpc_reqmap_t){0};
}
