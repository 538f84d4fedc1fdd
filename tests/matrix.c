/*
 * The reference side of the test matrix. Inputs are integer-valued, chosen
 * per op so that every result is exactly representable in every type (sums
 * stay small, products are +-1 or +-2), so float results can be compared
 * bit for bit. The expected output is computed here from "logical" values
 * (int64 value + index) with scalar code and conversions written
 * independently of the library's kernels.
 */
#include "config.h"
#include "matrix.h"
#include "dpc_pairs.h"
#include "nodes.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mx_runs;

typedef struct { int64_t v; int i; } lval_t;

static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full ^
                 (c + 17) * 0x165667B19E3779F9ull;
    h ^= h >> 31;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
    return h;
}

static bool is_unsigned(dpc_dtype_t dt)
{
    return dt == DPC_UINT8 || dt == DPC_UINT16 || dt == DPC_UINT32 || dt == DPC_UINT64 ||
           dt == DPC_BOOL || dt == DPC_BYTE;
}

/* DPC_OP_USER_ORDERED's elements (uint64): the map x -> m x + c on uint32,
 * m in the low half, c in the high one; a op b is "a, then b":
 * (b.m a.m, b.m a.c + b.c), exact modulo 2^32, associative and not
 * commutative, so only operands combined in rank order give the reference */
static uint64_t affine_pack(uint32_t m, uint32_t c)
{
    return (uint64_t)m | (uint64_t)c << 32;
}

static uint64_t affine_then(uint64_t a, uint64_t b)
{
    uint32_t am = (uint32_t)a, ac = (uint32_t)(a >> 32), bm = (uint32_t)b, bc = (uint32_t)(b >> 32);
    return affine_pack(bm * am, bm * ac + bc);
}

/* the input value of rank r at element i, for op */
static lval_t gen(dpc_dtype_t dt, dpc_op_t op, int r, size_t i, int p)
{
    uint64_t h = hash3((uint64_t)r, i, (uint64_t)op * 31 + (uint64_t)dt);
    lval_t v = {0, (int)((h >> 40) % 1000)};
    bool u = is_unsigned(dt);
    switch (op) {
    case DPC_OP_SUM: case DPC_OP_USER: v.v = u ? (int64_t)(h % 4) : (int64_t)(h % 7) - 3; break;
    case DPC_OP_PROD:
        v.v = ((size_t)r == i % (size_t)p && (h & 1)) ? 2 : (!u && h % 3 == 0 ? -1 : 1);
        break;
    case DPC_OP_MIN: case DPC_OP_MAX: v.v = u ? (int64_t)(h % 201) : (int64_t)(h % 201) - 100; break;
    case DPC_OP_LAND: case DPC_OP_LOR: case DPC_OP_LXOR:
        v.v = dt == DPC_BOOL ? (h % 8 != 0) : (h % 8 == 0 ? 0 : (int64_t)(h % 2 + 1));
        break;
    case DPC_OP_BAND: case DPC_OP_BOR: case DPC_OP_BXOR: v.v = (int64_t)(h | (h >> 7)); break;
    case DPC_OP_USER_ORDERED: v.v = (int64_t)affine_pack(2 * (uint32_t)(h % 5) + 1,
                                                         (uint32_t)(h >> 8) % 1000); break;
    default: v.v = (int64_t)(h % 11) - 5; break;    /* minloc/maxloc: many ties */
    }
    return v;
}

static lval_t combine(dpc_op_t op, lval_t a, lval_t b)
{
    lval_t r = a;
    switch (op) {
    case DPC_OP_SUM: case DPC_OP_USER: r.v = (int64_t)((uint64_t)a.v + (uint64_t)b.v); break;
    case DPC_OP_PROD: r.v = (int64_t)((uint64_t)a.v * (uint64_t)b.v); break;
    case DPC_OP_MIN: r.v = a.v < b.v ? a.v : b.v; break;
    case DPC_OP_MAX: r.v = a.v > b.v ? a.v : b.v; break;
    case DPC_OP_LAND: r.v = a.v && b.v; break;
    case DPC_OP_LOR: r.v = a.v || b.v; break;
    case DPC_OP_LXOR: r.v = !a.v != !b.v; break;
    case DPC_OP_BAND: r.v = a.v & b.v; break;
    case DPC_OP_BOR: r.v = a.v | b.v; break;
    case DPC_OP_BXOR: r.v = a.v ^ b.v; break;
    case DPC_OP_USER_ORDERED: r.v = (int64_t)affine_then((uint64_t)a.v, (uint64_t)b.v); break;
    case DPC_OP_MINLOC: case DPC_OP_MAXLOC: {
        bool better = op == DPC_OP_MINLOC ? b.v < a.v : b.v > a.v;
        if (better)
            r = b;
        else if (a.v == b.v)
            r.i = a.i < b.i ? a.i : b.i;
        break;
    }
    default: break;
    }
    return r;
}

/* Exact integer -> binary16 / bfloat16 for small integers (|v| < 2^11 and
 * 2^8), by counting bits: independent of the library's conversions. */
static uint16_t int_to_small_float(int64_t v, int mant_bits, int bias, int exp_shift)
{
    uint16_t sign = v < 0 ? 0x8000 : 0;
    uint64_t m = (uint64_t)(v < 0 ? -v : v);
    if (m == 0)
        return sign;
    int e = 63 - __builtin_clzll(m);             /* m = 1.xxx * 2^e */
    uint64_t frac = (m - (1ull << e)) << (mant_bits - e);
    return (uint16_t)(sign | (uint16_t)((uint64_t)(e + bias) << exp_shift) | (uint16_t)frac);
}

static void store(dpc_dtype_t dt, void *p, lval_t v)
{
    switch (dt) {
    case DPC_INT8: case DPC_UINT8: case DPC_BYTE: *(uint8_t *)p = (uint8_t)v.v; break;
    case DPC_INT16: case DPC_UINT16: *(uint16_t *)p = (uint16_t)v.v; break;
    case DPC_INT32: case DPC_UINT32: *(uint32_t *)p = (uint32_t)v.v; break;
    case DPC_INT64: case DPC_UINT64: *(uint64_t *)p = (uint64_t)v.v; break;
    case DPC_FLOAT16: *(uint16_t *)p = int_to_small_float(v.v, 10, 15, 10); break;
    case DPC_BFLOAT16: *(uint16_t *)p = int_to_small_float(v.v, 7, 127, 7); break;
    case DPC_FLOAT: *(float *)p = (float)v.v; break;
    case DPC_DOUBLE: *(double *)p = (double)v.v; break;
    case DPC_LONG_DOUBLE: *(long double *)p = (long double)v.v; break;
    case DPC_BOOL: *(_Bool *)p = v.v != 0; break;
    case DPC_FLOAT_INT: *(dpc_float_int_t *)p = (dpc_float_int_t){(float)v.v, v.i}; break;
    case DPC_DOUBLE_INT: *(dpc_double_int_t *)p = (dpc_double_int_t){(double)v.v, v.i}; break;
    case DPC_LONG_INT: *(dpc_long_int_t *)p = (dpc_long_int_t){(long)v.v, v.i}; break;
    case DPC_2INT: *(dpc_2int_t *)p = (dpc_2int_t){(int)v.v, v.i}; break;
    case DPC_SHORT_INT: *(dpc_short_int_t *)p = (dpc_short_int_t){(short)v.v, v.i}; break;
    case DPC_LONG_DOUBLE_INT:
        *(dpc_long_double_int_t *)p = (dpc_long_double_int_t){(long double)v.v, v.i};
        break;
    /* (the real axis: sums and products of these stay exact and real;
     * test_reduce checks the kernels off it) */
    case DPC_COMPLEX_FLOAT: *(dpc_complex_float_t *)p = (dpc_complex_float_t){(float)v.v, 0}; break;
    case DPC_COMPLEX_DOUBLE:
        *(dpc_complex_double_t *)p = (dpc_complex_double_t){(double)v.v, 0};
        break;
    default: break;
    }
}

/* Compare n elements on their value bytes only (long double padding);
 * complex ones by value: a product on the real axis has an imaginary part
 * of +0 or -0 by the signs of its factors, which no integer reference
 * follows (test_reduce checks those bits). */
static long value_diff(dpc_dtype_t dt, const char *x, const char *y, size_t n)
{
    if (dt == DPC_COMPLEX_FLOAT || dt == DPC_COMPLEX_DOUBLE) {
        bool f = dt == DPC_COMPLEX_FLOAT;
        for (size_t i = 0; i < 2 * n; i++) {
            double a, b;
            if (f) {
                float fa, fb;
                memcpy(&fa, x + 4 * i, 4);
                memcpy(&fb, y + 4 * i, 4);
                a = fa;
                b = fb;
            } else {
                memcpy(&a, x + 8 * i, 8);
                memcpy(&b, y + 8 * i, 8);
            }
            if (a != b)
                return (long)(i / 2);
        }
        return -1;
    }
    size_t es = dpc_dtype_size(dt), o1, l1, o2, l2;
    dpc_dtype_value_bytes(dt, &o1, &l1, &o2, &l2);
    for (size_t i = 0; i < n; i++) {
        const char *a = x + i * es, *b = y + i * es;
        if (memcmp(a + o1, b + o1, l1) || (l2 && memcmp(a + o2, b + o2, l2)))
            return (long)i;
    }
    return -1;
}

int mx_type_ops(dpc_dtype_t *dts, dpc_op_t *ops, int max)
{
    int n = 0;
    for (int op = 0; op < DPC_OP_COUNT; op++)
        for (int dt = 0; dt < DPC_DTYPE_COUNT; dt++)
            if (dpc_op_valid(op, dt) && n < max) {
                dts[n] = dt;
                ops[n] = op;
                n++;
            }
    return n;
}

/* The program's op of a DPC_OP_USER case (mx_case_t), in MPI's form:
 * inout[i] = in[i] OP inout[i]. */
#define USER_SUM(T)                                                           \
    do {                                                                      \
        const T *x = in;                                                      \
        T *y = inout;                                                         \
        for (size_t i = 0; i < n; i++)                                        \
            y[i] = (T)(x[i] + y[i]);                                          \
    } while (0)

static void user_op(void *ctx, const void *in, void *inout, size_t n)
{
    const mx_case_t *c = ctx;
    if (c->op == DPC_OP_USER_ORDERED) {
        const uint64_t *x = in;
        uint64_t *y = inout;
        for (size_t i = 0; i < n; i++)
            y[i] = affine_then(x[i], y[i]);
        return;
    }
    if (c->order_only) {
        const uint32_t *x = in;
        uint32_t *y = inout;
        for (size_t i = 0; i < n; i++)
            y[i] = 3u * x[i] + y[i];
        return;
    }
    switch (c->dt) {
    case DPC_UINT8: USER_SUM(uint8_t); break;
    case DPC_INT16: USER_SUM(int16_t); break;
    case DPC_INT32: USER_SUM(int32_t); break;
    case DPC_INT64: USER_SUM(int64_t); break;
    case DPC_FLOAT: USER_SUM(float); break;
    case DPC_DOUBLE: USER_SUM(double); break;
    default: abort();   /* (a case the tests do not make) */
    }
}

/* ---- one run ------------------------------------------------------------ */

#define GUARD 64
#define FILL 0xA5

typedef struct world {
    int p;
    dpc_coll_args_t *args;
    char **sbuf, **rbuf, **expect;
    size_t *sbytes, *rbytes;         /* allocated sizes without guard */
    size_t *counts, *displs;         /* shared by all ranks */
    size_t **scounts, **sdispls;     /* per rank (alltoallv) */
    size_t **rcounts, **rdispls;     /* per rank (alltoallv receive side) */
    int *node;                       /* the node map, or NULL (one node) */
} world_t;

/* The nodes c's ranks are on (mx_case_t's nodes). */
static int case_nodes(const mx_case_t *c)
{
    if (c->nodes)
        return c->nodes;
    return (c->algo->flags & DPC_ALGO_NODES) ? test_default_nodes(c->p) : 0;
}

/* c's node map into a (node: p ints, or NULL for one node). */
static void set_nodes(const mx_case_t *c, int *node, dpc_coll_args_t *a)
{
    int nodes = case_nodes(c);
    if (nodes < 2 || !node)
        return;
    a->node_ranks = test_node_map(c->p, nodes, c->round_robin, node);
    a->node = node;
    a->nnodes = nodes;
}

bool mx_applies(const mx_case_t *c)
{
    int *node = malloc(sizeof(int) * (size_t)c->p);
    dpc_coll_args_t a = {.coll = c->algo->coll, .size = c->p, .op = c->op, .dtype = c->dt,
                         .one_sided = true};
    set_nodes(c, node, &a);
    bool ok = node && dpc_algo_applies(c->algo, &a);
    free(node);
    return ok;
}

static size_t vcount(size_t c, int i)
{
    return i % 3 == 1 ? 0 : c + (size_t)(i % 4);
}

/* alltoallv: elements rank r sends to rank j; symmetric so in-place works */
static size_t a2a_count(size_t c, int r, int j)
{
    int s = r + j;
    return s % 4 == 0 ? 0 : c / (size_t)(1 + s % 3) + (size_t)((r * j) % 2);
}

static void world_free(world_t *w)
{
    for (int r = 0; r < w->p; r++) {
        if (w->sbuf) free(w->sbuf[r]);
        if (w->rbuf) free(w->rbuf[r]);
        if (w->expect) free(w->expect[r]);
        if (w->scounts) free(w->scounts[r]);
        if (w->sdispls) free(w->sdispls[r]);
        if (w->rcounts) free(w->rcounts[r]);
        if (w->rdispls) free(w->rdispls[r]);
    }
    free(w->rcounts); free(w->rdispls);
    free(w->sbuf); free(w->rbuf); free(w->expect); free(w->sbytes); free(w->rbytes);
    free(w->counts); free(w->displs); free(w->scounts); free(w->sdispls); free(w->args);
    free(w->node);
}

/* Builds buffers, arguments and expected outputs. */
static int world_make(world_t *w, const mx_case_t *c)
{
    int p = c->p;
    dpc_coll_t coll = c->algo->coll;
    bool reduces = dpc_coll_reduces(coll);
    dpc_dtype_t dt = reduces ? c->dt : c->dt;
    size_t es = dpc_dtype_size(dt);
    memset(w, 0, sizeof(*w));
    w->p = p;
    w->args = calloc((size_t)p, sizeof(dpc_coll_args_t));
    w->sbuf = calloc((size_t)p, sizeof(char *));
    w->rbuf = calloc((size_t)p, sizeof(char *));
    w->expect = calloc((size_t)p, sizeof(char *));
    w->sbytes = calloc((size_t)p, sizeof(size_t));
    w->rbytes = calloc((size_t)p, sizeof(size_t));
    w->counts = calloc((size_t)p, sizeof(size_t));
    w->displs = calloc((size_t)p, sizeof(size_t));
    w->scounts = calloc((size_t)p, sizeof(size_t *));
    w->sdispls = calloc((size_t)p, sizeof(size_t *));
    w->rcounts = calloc((size_t)p, sizeof(size_t *));
    w->rdispls = calloc((size_t)p, sizeof(size_t *));
    w->node = case_nodes(c) >= 2 ? malloc(sizeof(int) * (size_t)p) : NULL;
    if ((case_nodes(c) >= 2 && !w->node) || !w->rcounts || !w->rdispls ||
        !w->args || !w->sbuf || !w->rbuf || !w->expect || !w->sbytes || !w->rbytes ||
        !w->counts || !w->displs || !w->scounts || !w->sdispls)
        return -1;
    bool v = coll == DPC_REDUCE_SCATTER || coll == DPC_ALLGATHERV || coll == DPC_ALLTOALLV;
    size_t total = 0;
    for (int i = 0; i < p; i++) {
        w->counts[i] = v ? vcount(c->count, i) : c->count;
        total += w->counts[i];
    }
    /* allgatherv: blocks in reverse rank order with one-element gaps */
    size_t at = 0;
    for (int i = p - 1; i >= 0; i--) {
        w->displs[i] = coll == DPC_ALLGATHERV ? at : (size_t)i * c->count;
        at += w->counts[i] + 1;
    }
    for (int r = 0; r < p; r++) {
        dpc_coll_args_t *a = &w->args[r];
        a->coll = coll; a->rank = r; a->size = p; a->dtype = dt; a->op = c->op;
        a->in_place = c->in_place && coll != DPC_BCAST;
        a->root = coll == DPC_BCAST && c->in_place ? p - 1 : 0;
        a->seg_bytes = c->seg_bytes;
        a->push_max = c->push_max;   /* (push_min 0: from the smallest call) */
        a->one_sided = true;       /* the simulator reads peers' memory too */
        set_nodes(c, w->node, a);
        a->count = c->count;
        size_t sn = 0, rn = 0;
        switch (coll) {
        case DPC_ALLREDUCE: sn = rn = c->count; break;
        case DPC_REDUCE_SCATTER_BLOCK: sn = c->count * (size_t)p; rn = c->count; break;
        case DPC_REDUCE_SCATTER: sn = total; rn = w->counts[r]; a->counts = w->counts; break;
        case DPC_ALLGATHER: sn = c->count; rn = c->count * (size_t)p; break;
        case DPC_ALLGATHERV:
            sn = w->counts[r]; rn = at; a->counts = w->counts; a->displs = w->displs; break;
        case DPC_BCAST: sn = 0; rn = c->count; break;
        case DPC_ALLTOALL: sn = rn = c->count * (size_t)p; break;
        case DPC_ALLTOALLV: {
            w->scounts[r] = calloc((size_t)p, sizeof(size_t));
            w->sdispls[r] = calloc((size_t)p, sizeof(size_t));
            w->rcounts[r] = calloc((size_t)p, sizeof(size_t));
            w->rdispls[r] = calloc((size_t)p, sizeof(size_t));
            if (!w->scounts[r] || !w->sdispls[r] || !w->rcounts[r] || !w->rdispls[r])
                return -1;
            /* send side: reverse order with gaps; receive side: packed.
             * In place both are the receive layout (counts are symmetric). */
            size_t so = 0;
            for (int j = p - 1; j >= 0; j--) {
                w->scounts[r][j] = a2a_count(c->count, r, j);
                w->sdispls[r][j] = so;
                so += w->scounts[r][j] + 1;
            }
            sn = so;
            rn = 0;
            for (int j = 0; j < p; j++) {
                w->rcounts[r][j] = a2a_count(c->count, j, r);
                w->rdispls[r][j] = rn;
                rn += w->rcounts[r][j];
            }
            a->scounts = w->scounts[r];
            a->sdispls = w->sdispls[r];
            a->counts = w->rcounts[r];
            a->displs = w->rdispls[r];
            if (a->in_place) {      /* the send layout is the receive layout */
                a->scounts = a->sdispls = NULL;
                sn = rn;
            }
            break;
        }
        default: break;
        }
        if (a->in_place && rn < sn)
            rn = sn;           /* in place, rbuf holds the input */
        w->sbytes[r] = sn * es;
        w->rbytes[r] = rn * es;
        w->sbuf[r] = malloc(w->sbytes[r] + GUARD);
        w->rbuf[r] = malloc(w->rbytes[r] + GUARD);
        w->expect[r] = malloc(w->rbytes[r] + GUARD);
        if (!w->sbuf[r] || !w->rbuf[r] || !w->expect[r])
            return -1;
        memset(w->rbuf[r], FILL, w->rbytes[r] + GUARD);
        memset(w->sbuf[r], 0, w->sbytes[r] + GUARD);
        a->sbuf = w->sbuf[r];
        a->rbuf = w->rbuf[r];
    }
    return 0;
}

/* Fill inputs (into rbuf when in place) and compute the expected outputs. */
static void world_fill(world_t *w, const mx_case_t *c)
{
    int p = w->p;
    dpc_coll_t coll = c->algo->coll;
    dpc_dtype_t dt = c->dt;
    size_t es = dpc_dtype_size(dt);
    for (int r = 0; r < p; r++) {
        dpc_coll_args_t *a = &w->args[r];
        char *in = a->in_place ? w->rbuf[r] : w->sbuf[r];
        size_t inbytes = a->in_place ? w->rbytes[r] : w->sbytes[r];
        if (coll == DPC_BCAST)
            in = w->rbuf[r], inbytes = w->rbytes[r];
        if (dpc_coll_reduces(coll)) {
            for (size_t i = 0; i < inbytes / es; i++)
                store(dt, in + i * es, gen(dt, c->op, r, i, p));
        } else {
            for (size_t i = 0; i < inbytes; i++)
                in[i] = (char)hash3((uint64_t)r + 1000, i, 7);
        }
        memcpy(w->expect[r], w->rbuf[r], w->rbytes[r] + GUARD);
    }
    /* the reduction of every element of the whole vector, once: all ranks'
     * contributions combined in rank order */
    lval_t *ref = NULL;
    if (dpc_coll_reduces(coll)) {
        size_t total = 0;
        for (int i = 0; i < p; i++)
            total += coll == DPC_ALLREDUCE ? (i == 0 ? c->count : 0) : w->counts[i];
        ref = malloc(sizeof(lval_t) * (total + 1));
        if (!ref)
            abort();
        for (size_t i = 0; i < total; i++) {
            ref[i] = gen(dt, c->op, 0, i, p);
            for (int q = 1; q < p; q++)
                ref[i] = combine(c->op, ref[i], gen(dt, c->op, q, i, p));
        }
    }
    /* expected outputs, from the inputs as just generated */
    for (int r = 0; r < p; r++) {
        dpc_coll_args_t *a = &w->args[r];
        char *e = w->expect[r];
        switch (coll) {
        case DPC_ALLREDUCE: case DPC_REDUCE_SCATTER_BLOCK: case DPC_REDUCE_SCATTER: {
            size_t first = 0, n = c->count;
            if (coll != DPC_ALLREDUCE) {
                for (int i = 0; i < r; i++)
                    first += w->counts[i];
                n = w->counts[r];
            }
            for (size_t i = 0; i < n; i++)
                store(dt, e + i * es, ref[first + i]);
            break;
        }
        case DPC_ALLGATHER: case DPC_ALLGATHERV:
            for (int q = 0; q < p; q++) {
                const char *src = w->args[q].in_place ? w->rbuf[q] + w->displs[q] * es : w->sbuf[q];
                if (coll == DPC_ALLGATHER && w->args[q].in_place)
                    src = w->rbuf[q] + (size_t)q * c->count * es;
                memcpy(e + w->displs[q] * es, src, w->counts[q] * es);
            }
            break;
        case DPC_BCAST:
            memcpy(e, w->rbuf[a->root], w->rbytes[r]);
            break;
        case DPC_ALLTOALL:
            for (int q = 0; q < p; q++) {
                const char *src = w->args[q].in_place ? w->rbuf[q] : w->sbuf[q];
                memcpy(e + (size_t)q * c->count * es, src + (size_t)r * c->count * es, c->count * es);
            }
            break;
        case DPC_ALLTOALLV:
            for (int q = 0; q < p; q++) {
                const dpc_coll_args_t *aq = &w->args[q];
                const char *src = aq->in_place ? w->rbuf[q] : w->sbuf[q];
                size_t soff = aq->in_place ? w->rdispls[q][r] : w->sdispls[q][r];
                memcpy(e + w->rdispls[r][q] * es, src + soff * es, w->rcounts[r][q] * es);
            }
            break;
        default: break;
        }
    }
    free(ref);
}

/* How much of rbuf is output (the rest, with the guard, must stay as it was). */
static size_t out_bytes(const world_t *w, const mx_case_t *c, int r)
{
    size_t es = dpc_dtype_size(c->dt);
    switch (c->algo->coll) {
    case DPC_REDUCE_SCATTER_BLOCK: return c->count * es;
    case DPC_REDUCE_SCATTER: return w->counts[r] * es;
    default: return w->rbytes[r];
    }
}

static int check_world(const world_t *w, const mx_case_t *c, char *msg, size_t len)
{
    dpc_dtype_t dt = c->dt;
    size_t es = dpc_dtype_size(dt);
    bool reduces = dpc_coll_reduces(c->algo->coll);
    for (int r = 0; r < w->p; r++) {
        size_t ob = out_bytes(w, c, r);
        long bad = c->order_only ? -1
                   : reduces ? value_diff(dt, w->rbuf[r], w->expect[r], ob / es)
                             : (memcmp(w->rbuf[r], w->expect[r], ob) ? 0 : -1);
        if (bad >= 0 && !reduces)
            for (size_t i = 0; i < ob; i++)
                if (w->rbuf[r][i] != w->expect[r][i]) {
                    bad = (long)i;
                    break;
                }
        if (bad >= 0) {
            snprintf(msg, len, "rank %d: wrong output at %s %ld", r, reduces ? "element" : "byte", bad);
            return -1;
        }
        /* beyond the output: untouched (in place, the input may be reused) */
        size_t from = w->args[r].in_place ? w->rbytes[r] : ob;
        for (size_t i = from; i < w->rbytes[r] + GUARD; i++)
            if ((unsigned char)w->rbuf[r][i] != FILL) {
                snprintf(msg, len, "rank %d: wrote byte %zu past its output (%zu bytes)", r, i, ob);
                return -1;
            }
    }
    return 0;
}

static int run_once(world_t *w, const mx_case_t *c, uint64_t seed, bool check_traffic,
                    char *msg, size_t len)
{
    /* (the reordered rerun also runs as a nonblocking call does, its local
     * work deferred and in slices) */
    dpc_sim_opts_t o = {.reorder_seed = seed,
                        .user_reduce = dpc_op_is_user(c->op) ? user_op : NULL,
                        .user_ctx = (void *)c, .defer_local = seed != 0};
    dpc_sim_t *sim = dpc_sim_create(w->p, &o);
    dpc_status_t *st = calloc((size_t)w->p, sizeof(dpc_status_t));
    char **em = calloc((size_t)w->p, sizeof(char *));
    int rc = -1;
    if (!sim || !st || !em) {
        snprintf(msg, len, "out of memory");
        goto out;
    }
    mx_runs++;
    if (dpc_sim_run(sim, c->algo, w->args, 0, st, em, NULL, NULL) != DPC_OK) {
        snprintf(msg, len, "the run hung (no rank could make progress)");
        goto out;
    }
    for (int r = 0; r < w->p; r++)
        if (st[r] != DPC_OK) {
            snprintf(msg, len, "rank %d failed: %s", r, em[r] ? em[r] : dpc_status_str(st[r]));
            goto out;
        }
    if (dpc_sim_pending(sim)) {
        snprintf(msg, len, "%d transfers left behind", dpc_sim_pending(sim));
        goto out;
    }
    for (int r = 0; r < w->p; r++)
        if (dpc_sim_regions(sim, r)) {
            snprintf(msg, len, "rank %d left %d regions exposed", r, dpc_sim_regions(sim, r));
            goto out;
        }
    if (check_traffic)
        for (int r = 0; r < w->p; r++) {
            uint64_t want = c->algo->bytes_sent(&w->args[r], r), got = dpc_sim_bytes_sent(sim, r);
            uint64_t wantm = c->algo->msgs_sent(&w->args[r], r), gotm = dpc_sim_msgs_sent(sim, r);
            if (want != got || wantm != gotm) {
                snprintf(msg, len, "rank %d sent %llu bytes in %llu messages; formula says %llu in %llu",
                         r, (unsigned long long)got, (unsigned long long)gotm,
                         (unsigned long long)want, (unsigned long long)wantm);
                goto out;
            }
        }
    rc = 0;
out:
    if (em)
        dpc_sim_free_msgs(em, w->p);
    free(em);
    free(st);
    dpc_sim_destroy(sim);
    return rc;
}

int mx_run(const mx_case_t *c, char *msg, size_t len)
{
    world_t w;
    int rc = -1;
    char **first = NULL;
    if (world_make(&w, c)) {
        snprintf(msg, len, "out of memory");
        goto out;
    }
    world_fill(&w, c);
    if (run_once(&w, c, 0, true, msg, len) || check_world(&w, c, msg, len))
        goto out;
    /* allreduce: every rank's result bit for bit the same (not only equal
     * to the reference on value bytes) */
    if (c->algo->coll == DPC_ALLREDUCE && c->dt != DPC_LONG_DOUBLE && c->dt != DPC_LONG_DOUBLE_INT)
        for (int r = 1; r < w.p; r++)
            if (memcmp(w.rbuf[r], w.rbuf[0], w.rbytes[0])) {
                snprintf(msg, len, "rank %d's result differs bitwise from rank 0's", r);
                goto out;
            }
    if (c->reorder_seed) {
        /* same inputs, deliveries in a random order: same bits out */
        first = calloc((size_t)w.p, sizeof(char *));
        if (!first)
            goto out;
        for (int r = 0; r < w.p; r++) {
            first[r] = malloc(w.rbytes[r] + GUARD);
            if (!first[r])
                goto out;
            memcpy(first[r], w.rbuf[r], w.rbytes[r] + GUARD);
            memset(w.rbuf[r], FILL, w.rbytes[r] + GUARD);
        }
        world_fill(&w, c);
        if (run_once(&w, c, c->reorder_seed, false, msg, len))
            goto out;
        size_t es = dpc_dtype_size(c->dt);
        for (int r = 0; r < w.p; r++)
            if (dpc_coll_reduces(c->algo->coll)
                    ? value_diff(c->dt, first[r], w.rbuf[r], out_bytes(&w, c, r) / es) >= 0
                    : memcmp(first[r], w.rbuf[r], out_bytes(&w, c, r)) != 0) {
                snprintf(msg, len, "rank %d: reordered delivery, local work deferred, changed the result", r);
                goto out;
            }
    }
    rc = 0;
out:
    if (first)
        for (int r = 0; r < w.p; r++)
            free(first[r]);
    free(first);
    world_free(&w);
    return rc;
}

int mx_run_fault(const mx_case_t *c, const mx_fault_t *f, char *msg, size_t len)
{
    world_t w;
    int rc = -1;
    dpc_sim_t *sim = NULL;
    dpc_status_t *st = NULL;
    char **em = NULL;
    if (world_make(&w, c)) {
        snprintf(msg, len, "out of memory");
        goto out;
    }
    world_fill(&w, c);
    sim = dpc_sim_create(w.p, NULL);
    st = calloc((size_t)w.p, sizeof(*st));
    em = calloc((size_t)w.p, sizeof(char *));
    if (!sim || !st || !em)
        goto out;
    if (f->kind == 1)
        dpc_sim_fail_send(sim, f->rank, f->k);
    else if (f->kind == 2)
        dpc_sim_fail_recv(sim, f->rank, f->k);
    else if (f->kind == 3)
        dpc_sim_kill(sim, f->rank);
    mx_runs++;
    /* a timeout is what ends the ranks stuck behind the fault */
    if (dpc_sim_run(sim, c->algo, w.args, 30ull * 1000000000ull, st, em, NULL, NULL) != DPC_OK) {
        snprintf(msg, len, "the run did not end");
        goto out;
    }
    if (dpc_sim_pending(sim)) {
        snprintf(msg, len, "%d transfers left behind after the fault", dpc_sim_pending(sim));
        goto out;
    }
    /* would the fault have triggered? (the rank sends/receives that often) */
    uint64_t nsend = c->algo->msgs_sent(&w.args[f->rank], f->rank);
    bool triggers = f->kind == 3 || (f->kind == 1 && nsend >= (uint64_t)f->k) ||
                    (f->kind == 2 && st[f->rank] != DPC_OK);
    if (triggers && st[f->rank] == DPC_OK) {
        snprintf(msg, len, "rank %d succeeded despite its fault", f->rank);
        goto out;
    }
    for (int r = 0; r < w.p; r++) {
        if (st[r] == DPC_OK)
            continue;   /* its result is checked below */
        if (st[r] != DPC_ERR_TRANSPORT && st[r] != DPC_ERR_PEER_LOST && st[r] != DPC_ERR_TIMEOUT) {
            snprintf(msg, len, "rank %d ended with unexpected status %s", r, dpc_status_str(st[r]));
            goto out;
        }
        if (!em[r] || !*em[r]) {
            snprintf(msg, len, "rank %d failed without a description", r);
            goto out;
        }
        if (st[r] == DPC_ERR_TIMEOUT && !strstr(em[r], "waiting for rank")) {
            snprintf(msg, len, "rank %d timed out without naming whom it waited for: %s", r, em[r]);
            goto out;
        }
    }
    /* successful ranks: exact results (checked on value bytes) */
    for (int r = 0; r < w.p; r++) {
        if (st[r] != DPC_OK || (f->kind == 3 && r == f->rank))
            continue;
        size_t ob = out_bytes(&w, c, r), es = dpc_dtype_size(c->dt);
        bool bad = dpc_coll_reduces(c->algo->coll) ? value_diff(c->dt, w.rbuf[r], w.expect[r], ob / es) >= 0
                                                   : memcmp(w.rbuf[r], w.expect[r], ob) != 0;
        if (bad) {
            snprintf(msg, len, "rank %d reported success with a wrong result", r);
            goto out;
        }
    }
    if (!triggers)
        for (int r = 0; r < w.p; r++)
            if (st[r] != DPC_OK) {
                snprintf(msg, len, "rank %d failed (%s) though the fault never triggered", r,
                         em[r] ? em[r] : "?");
                goto out;
            }
    rc = 0;
out:
    if (em)
        dpc_sim_free_msgs(em, w.p);
    free(em);
    free(st);
    dpc_sim_destroy(sim);
    world_free(&w);
    return rc;
}
