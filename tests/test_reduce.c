/*
 * Host reduction kernels against scalar references written here: every
 * (op, type) MPI defines, aliased and not, at lengths that exercise the
 * vector bodies and their scalar tails; the 16-bit float conversions on
 * their edge cases (ties, subnormals, overflow, NaN) against exhaustive or
 * arithmetic references.
 */
#include "config.h"
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dpc_half.h"
#include "dpc_pairs.h"
#include "dpc_reduce.h"

/* ---- 16-bit floats: references by arithmetic, not bit tricks ---------- */

static double ref_half_to_double(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31)
        return m ? NAN : (s ? -INFINITY : INFINITY);
    v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return s ? -v : v;
}

START_TEST(test_half_to_float_exhaustive)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = dpc_half_to_float((uint16_t)h);
        double want = ref_half_to_double((uint16_t)h);
        if (isnan(want))
            ck_assert_msg(isnan(f), "0x%04x should be NaN", h);
        else
            ck_assert_msg((double)f == want && !signbit(f) == !signbit(want),
                          "0x%04x -> %a, want %a", h, (double)f, want);
    }
}
END_TEST

/* The nearest half (ties to even) by search over all finite halves. */
static uint16_t ref_nearest_half(float f)
{
    static double vals[31 * 1024];
    static int init;
    if (!init) {
        for (int i = 0; i < 31 * 1024; i++)
            vals[i] = ref_half_to_double((uint16_t)i);
        init = 1;
    }
    double a = fabs((double)f);
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    if (a >= 65520.0)     /* max half + half an ulp: rounds to infinity */
        return sign | 0x7c00;
    int lo = 0, hi = 31 * 1024 - 1;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (vals[mid] <= a)
            lo = mid;
        else
            hi = mid;
    }
    double dl = a - vals[lo], dh = vals[hi] - a;
    int pick = dl < dh ? lo : dh < dl ? hi : ((lo & 1) ? hi : lo);
    return sign | (uint16_t)pick;
}

START_TEST(test_float_to_half_rounding)
{
    /* every half, the midpoints between neighbours (ties), and points just
     * either side of them */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        double v = ref_half_to_double((uint16_t)h), next = ref_half_to_double((uint16_t)(h + 1));
        double mids[] = {v, (v + next) / 2};
        for (int k = 0; k < 2; k++) {
            float f = (float)mids[k];
            float probes[] = {f, nextafterf(f, 0), nextafterf(f, INFINITY)};
            for (int j = 0; j < 3; j++)
                for (int s = 0; s < 2; s++) {
                    float x = s ? -probes[j] : probes[j];
                    ck_assert_msg(dpc_float_to_half(x) == ref_nearest_half(x),
                                  "%a -> 0x%04x, want 0x%04x", (double)x, dpc_float_to_half(x),
                                  ref_nearest_half(x));
                }
        }
    }
    ck_assert_uint_eq(dpc_float_to_half(INFINITY), 0x7c00);
    ck_assert_uint_eq(dpc_float_to_half(-INFINITY), 0xfc00);
    ck_assert_uint_eq(dpc_float_to_half(1e10f), 0x7c00);
    ck_assert(isnan(dpc_half_to_float(dpc_float_to_half(NAN))));
}
END_TEST

START_TEST(test_bf16)
{
    /* exact round trip of every bf16, and ties to even on the dropped half */
    for (uint32_t b = 0; b < 65536; b++) {
        float f = dpc_bf16_to_float((uint16_t)b);
        if (isnan(f))
            ck_assert(isnan(dpc_bf16_to_float(dpc_float_to_bf16(f))));
        else
            ck_assert_uint_eq(dpc_float_to_bf16(f), b);
    }
    uint32_t one = 0x3f800000u;
    ck_assert_uint_eq(dpc_float_to_bf16(dpc_u2f(one | 0x8000u)), 0x3f80);     /* tie: even */
    ck_assert_uint_eq(dpc_float_to_bf16(dpc_u2f(one | 0x18000u)), 0x3f82);    /* tie: even up */
    ck_assert_uint_eq(dpc_float_to_bf16(dpc_u2f(one | 0x8001u)), 0x3f81);     /* above tie */
    ck_assert_uint_eq(dpc_float_to_bf16(dpc_u2f(0x7f7fffffu)), 0x7f80);       /* overflow */
    ck_assert(isnan(dpc_bf16_to_float(dpc_float_to_bf16(dpc_u2f(0x7f800001u))))); /* sNaN stays NaN */
}
END_TEST

/* ---- kernels ----------------------------------------------------------- */

typedef struct { long double v; long long i; } ref_t;

static int is_signed_int(dpc_dtype_t dt)
{
    return dt == DPC_INT8 || dt == DPC_INT16 || dt == DPC_INT32 || dt == DPC_INT64;
}

/* load one element as a (value, index) pair */
static ref_t load(dpc_dtype_t dt, const void *p)
{
    switch (dt) {
    case DPC_INT8: return (ref_t){*(const int8_t *)p, 0};
    case DPC_UINT8: case DPC_BYTE: return (ref_t){*(const uint8_t *)p, 0};
    case DPC_INT16: return (ref_t){*(const int16_t *)p, 0};
    case DPC_UINT16: return (ref_t){*(const uint16_t *)p, 0};
    case DPC_INT32: return (ref_t){*(const int32_t *)p, 0};
    case DPC_UINT32: return (ref_t){*(const uint32_t *)p, 0};
    case DPC_INT64: return (ref_t){(long double)*(const int64_t *)p, 0};
    case DPC_UINT64: return (ref_t){(long double)*(const uint64_t *)p, 0};
    case DPC_FLOAT16: return (ref_t){ref_half_to_double(*(const uint16_t *)p), 0};
    case DPC_BFLOAT16: return (ref_t){dpc_bf16_to_float(*(const uint16_t *)p), 0};
    case DPC_FLOAT: return (ref_t){*(const float *)p, 0};
    case DPC_DOUBLE: return (ref_t){*(const double *)p, 0};
    case DPC_LONG_DOUBLE: return (ref_t){*(const long double *)p, 0};
    case DPC_BOOL: return (ref_t){*(const _Bool *)p, 0};
    case DPC_FLOAT_INT: return (ref_t){((const dpc_float_int_t *)p)->v, ((const dpc_float_int_t *)p)->i};
    case DPC_DOUBLE_INT: return (ref_t){((const dpc_double_int_t *)p)->v, ((const dpc_double_int_t *)p)->i};
    case DPC_LONG_INT: return (ref_t){((const dpc_long_int_t *)p)->v, ((const dpc_long_int_t *)p)->i};
    case DPC_2INT: return (ref_t){((const dpc_2int_t *)p)->v, ((const dpc_2int_t *)p)->i};
    case DPC_SHORT_INT: return (ref_t){((const dpc_short_int_t *)p)->v, ((const dpc_short_int_t *)p)->i};
    case DPC_LONG_DOUBLE_INT:
        return (ref_t){((const dpc_long_double_int_t *)p)->v, ((const dpc_long_double_int_t *)p)->i};
    default: return (ref_t){0, 0};
    }
}

/* Integer ops are checked on raw 64-bit patterns (wrap-around matters);
 * everything else on values. */
static uint64_t load_bits(dpc_dtype_t dt, const void *p)
{
    uint64_t u = 0;
    memcpy(&u, p, dpc_dtype_size(dt) > 8 ? 8 : dpc_dtype_size(dt));
    return u;
}

static uint64_t mask_of(dpc_dtype_t dt)
{
    size_t s = dpc_dtype_size(dt);
    return s >= 8 ? ~0ull : (1ull << (8 * s)) - 1;
}

/* Complex numbers: (ac - bd, ad + bc), each operation rounded to T on its
 * own (volatile: no fused multiply-add whatever the test's flags). */
#define CHECK_COMPLEX(T)                                                      \
    do {                                                                      \
        T a[2], b[2], g[2];                                                   \
        memcpy(a, x, sizeof a);                                               \
        memcpy(b, y, sizeof b);                                               \
        memcpy(g, got, sizeof g);                                             \
        if (op == DPC_OP_SUM)                                                 \
            return g[0] == a[0] + b[0] && g[1] == a[1] + b[1];                \
        volatile T ac = a[0] * b[0], bd = a[1] * b[1], ad = a[0] * b[1], bc = a[1] * b[0]; \
        return g[0] == ac - bd && g[1] == ad + bc;                            \
    } while (0)

/* reference for one element; returns 1 if the produced element is right */
static int check_elem(dpc_dtype_t dt, dpc_op_t op, const void *x, const void *y, const void *got)
{
    if (dt == DPC_COMPLEX_FLOAT)
        CHECK_COMPLEX(float);
    if (dt == DPC_COMPLEX_DOUBLE)
        CHECK_COMPLEX(double);
    bool integer = dt <= DPC_UINT64 || dt == DPC_BYTE;
    if (integer) {
        uint64_t a = load_bits(dt, x), b = load_bits(dt, y), g = load_bits(dt, got), m = mask_of(dt);
        ref_t av = load(dt, x), bv = load(dt, y);
        uint64_t want;
        switch (op) {
        case DPC_OP_SUM: want = a + b; break;
        case DPC_OP_PROD: want = a * b; break;  /* low bits of a product don't depend on sign */
        case DPC_OP_MIN: want = av.v <= bv.v ? a : b; break;
        case DPC_OP_MAX: want = av.v >= bv.v ? a : b; break;
        case DPC_OP_LAND: want = (a & m) && (b & m); break;
        case DPC_OP_LOR: want = (a & m) || (b & m); break;
        case DPC_OP_LXOR: want = !(a & m) != !(b & m); break;
        case DPC_OP_BAND: want = a & b; break;
        case DPC_OP_BOR: want = a | b; break;
        default: want = a ^ b; break;
        }
        return ((want ^ g) & m) == 0;
    }
    ref_t a = load(dt, x), b = load(dt, y), g = load(dt, got);
    switch (op) {
    case DPC_OP_SUM: case DPC_OP_PROD: {
        long double w = op == DPC_OP_SUM ? a.v + b.v : a.v * b.v;
        /* round the exact result to the type the way it is stored */
        switch (dt) {
        case DPC_FLOAT16: w = ref_half_to_double(ref_nearest_half((float)w)); break;
        case DPC_BFLOAT16: w = dpc_bf16_to_float(dpc_float_to_bf16((float)w)); break;
        case DPC_FLOAT: w = (float)w; break;   /* a float product is exact in long double */
        case DPC_DOUBLE:                      /* a double one is not: no double rounding */
            w = op == DPC_OP_SUM ? (double)a.v + (double)b.v : (double)a.v * (double)b.v;
            break;
        default: break;
        }
        return g.v == w;
    }
    case DPC_OP_MIN: return g.v == (a.v <= b.v ? a.v : b.v);
    case DPC_OP_MAX: return g.v == (a.v >= b.v ? a.v : b.v);
    case DPC_OP_LAND: return g.v == (a.v != 0 && b.v != 0);
    case DPC_OP_LOR: return g.v == (a.v != 0 || b.v != 0);
    case DPC_OP_LXOR: return g.v == ((a.v != 0) != (b.v != 0));
    case DPC_OP_MINLOC: case DPC_OP_MAXLOC: {
        ref_t w = a;
        bool better = op == DPC_OP_MINLOC ? b.v < a.v : b.v > a.v;
        if (better)
            w = b;
        else if (a.v == b.v)
            w.i = a.i < b.i ? a.i : b.i;
        return g.v == w.v && g.i == w.i;
    }
    default: return 0;
    }
}

static void fill(dpc_dtype_t dt, void *buf, size_t n, unsigned seed)
{
    size_t es = dpc_dtype_size(dt);
    unsigned char *p = buf;
    for (size_t i = 0; i < n; i++) {
        unsigned h = (unsigned)(i * 2654435761u) ^ (seed * 40503u);
        h ^= h >> 13;
        h *= 0x5bd1e995u;
        h ^= h >> 15;
        void *e = p + i * es;
        memset(e, 0, es);
        int small = (int)(h % 41) - 20;   /* ties and signs */
        switch (dt) {
        case DPC_FLOAT16: *(uint16_t *)e = (uint16_t)(h & 0x7bff); break; /* finite halves */
        case DPC_BFLOAT16: *(uint16_t *)e = (uint16_t)(h & 0x7f7f); break;
        case DPC_FLOAT: *(float *)e = (float)small / 4; break;
        case DPC_DOUBLE: *(double *)e = (double)small / 8 + (double)h * 1e-12; break;
        case DPC_LONG_DOUBLE: *(long double *)e = (long double)small / 3; break;
        case DPC_BOOL: *(_Bool *)e = h & 1; break;
        case DPC_FLOAT_INT: *(dpc_float_int_t *)e = (dpc_float_int_t){(float)(small % 3), (int)(h >> 20)}; break;
        case DPC_DOUBLE_INT: *(dpc_double_int_t *)e = (dpc_double_int_t){small % 3, (int)(h >> 20)}; break;
        case DPC_LONG_INT: *(dpc_long_int_t *)e = (dpc_long_int_t){small % 3, (int)(h >> 20)}; break;
        case DPC_2INT: *(dpc_2int_t *)e = (dpc_2int_t){small % 3, (int)(h >> 20)}; break;
        case DPC_SHORT_INT: *(dpc_short_int_t *)e = (dpc_short_int_t){(short)(small % 3), (int)(h >> 20)}; break;
        case DPC_LONG_DOUBLE_INT:
            *(dpc_long_double_int_t *)e = (dpc_long_double_int_t){small % 3, (int)(h >> 20)};
            break;
        case DPC_COMPLEX_FLOAT:   /* (products of quarters: inexact sums too) */
            *(dpc_complex_float_t *)e = (dpc_complex_float_t){(float)small / 4,
                                                              (float)(int)(h >> 24 & 63) / 7};
            break;
        case DPC_COMPLEX_DOUBLE:
            *(dpc_complex_double_t *)e = (dpc_complex_double_t){(double)small / 8 + (double)h * 1e-12,
                                                                (double)(h >> 20) * 1e-3};
            break;
        default:
            for (size_t b = 0; b < es; b++)
                ((unsigned char *)e)[b] = (unsigned char)(h >> (b % 4 * 8)) ^ (unsigned char)b;
            if (h % 5 == 0)
                memset(e, 0, es);   /* zeros for the logical ops */
            break;
        }
    }
}

/* loop over every (type, op); lengths around vector widths; three aliasings */
START_TEST(test_kernels)
{
    int dt = _i / DPC_OP_COUNT, op = _i % DPC_OP_COUNT;
    if (!dpc_op_valid(op, dt)) {
        ck_assert_ptr_null(dpc_reduce_kernel(op, dt));
        ck_assert_int_eq(dpc_reduce_host(NULL, NULL, NULL, 1, dt, op), DPC_ERR_UNSUPPORTED);
        return;
    }
    ck_assert_ptr_nonnull(dpc_reduce_kernel(op, dt));
    size_t es = dpc_dtype_size(dt);
    static const size_t lens[] = {0, 1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 255, 1000};
    for (unsigned li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
        size_t n = lens[li];
        char *a = malloc(n * es + 1), *b = malloc(n * es + 1), *d = malloc(n * es + 1);
        char *a0 = malloc(n * es + 1), *b0 = malloc(n * es + 1);
        fill(dt, a0, n, 1);
        fill(dt, b0, n, 2);
        for (int alias = 0; alias < 3; alias++) {
            memcpy(a, a0, n * es);
            memcpy(b, b0, n * es);
            char *dst = alias == 0 ? d : alias == 1 ? a : b;
            ck_assert_int_eq(dpc_reduce_host(dst, a, b, n, dt, op), DPC_OK);
            for (size_t i = 0; i < n; i++)
                ck_assert_msg(check_elem(dt, op, a0 + i * es, b0 + i * es, dst + i * es),
                              "%s %s n=%zu alias=%d: element %zu wrong", dpc_dtype_name(dt),
                              dpc_op_name(op), n, alias, i);
        }
        free(a); free(b); free(d); free(a0); free(b0);
    }
    (void)is_signed_int;
}
END_TEST

/* Operand order matters: MIN of +0 and -0 gives the right operand on the
 * tie (as x86 minps does), so swapping operands changes the bits. That is
 * why algorithms always pass the lower-ranked contribution on the left. */
START_TEST(test_operand_order)
{
    float a[1] = {0.0f}, b[1] = {-0.0f}, d[1];
    dpc_reduce_host(d, a, b, 1, DPC_FLOAT, DPC_OP_MIN);
    ck_assert(signbit(d[0]));
    dpc_reduce_host(d, b, a, 1, DPC_FLOAT, DPC_OP_MIN);
    ck_assert(!signbit(d[0]));
    dpc_2int_t x[1] = {{5, 9}}, y[1] = {{5, 2}}, z[1];
    dpc_reduce_host(z, x, y, 1, DPC_2INT, DPC_OP_MINLOC);
    ck_assert_int_eq(z[0].i, 2);   /* tie: smaller index */
}
END_TEST

/* The averaging division: one IEEE division per element (16-bit floats via
 * float, rounded once); integers refused. */
/* A program's op (inout = 3 in + inout, not commutative, so the operand
 * order shows) through dpc_reduce_user: into a separate output, into b,
 * and into a (through the bounce buffer, over several of its pieces);
 * 4-byte and 12-byte elements. */
static void affine_u32(void *ctx, const void *in, void *inout, size_t n)
{
    const uint32_t *x = in;
    uint32_t *y = inout;
    size_t words = n * *(const size_t *)ctx / 4;
    for (size_t i = 0; i < words; i++)
        y[i] = 3u * x[i] + y[i];
}

START_TEST(test_user_op)
{
    static const size_t sizes[] = {4, 12};
    for (int si = 0; si < 2; si++) {
        size_t es = sizes[si], n = 3001, words = n * es / 4;
        uint32_t *a = malloc(n * es), *b = malloc(n * es), *d = malloc(n * es);
        uint32_t *a0 = malloc(n * es), *b0 = malloc(n * es);
        ck_assert(a && b && d && a0 && b0);
        for (size_t i = 0; i < words; i++) {
            a0[i] = (uint32_t)(i * 2654435761u);
            b0[i] = (uint32_t)(i ^ 0x5bd1e995u);
        }
        for (int where = 0; where < 3; where++) {   /* separate, into b, into a */
            memcpy(a, a0, n * es);
            memcpy(b, b0, n * es);
            void *dst = where == 0 ? (void *)d : where == 1 ? (void *)b : (void *)a;
            ck_assert_int_eq(dpc_reduce_user(dst, a, b, n, es, affine_u32, &es), DPC_OK);
            const uint32_t *r = dst;
            for (size_t i = 0; i < words; i++)
                ck_assert_msg(r[i] == 3u * a0[i] + b0[i], "es %zu where %d word %zu", es, where, i);
            /* the operand that is not the output is left alone */
            if (where != 2)
                ck_assert(!memcmp(a, a0, n * es));
            if (where != 1)
                ck_assert(!memcmp(b, b0, n * es));
        }
        free(a); free(b); free(d); free(a0); free(b0);
    }
    size_t big = DPC_USER_ELEM_MAX + 1;
    ck_assert_int_eq(dpc_reduce_user(NULL, NULL, NULL, 1, big, affine_u32, &big),
                     DPC_ERR_UNSUPPORTED);
    ck_assert_int_eq(dpc_reduce_user(NULL, NULL, NULL, 1, 4, NULL, NULL), DPC_ERR_UNSUPPORTED);
}
END_TEST

START_TEST(test_div)
{
    float f[4] = {3, 1, -7, 0.5f};
    double d[3] = {1, 2, 10};
    ck_assert_int_eq(dpc_div_host(f, 4, DPC_FLOAT, 3), DPC_OK);
    ck_assert(f[0] == 1.0f && f[1] == 1.0f / 3.0f && f[2] == -7.0f / 3.0f && f[3] == 0.5f / 3.0f);
    ck_assert_int_eq(dpc_div_host(d, 3, DPC_DOUBLE, 4), DPC_OK);
    ck_assert(d[0] == 0.25 && d[1] == 0.5 && d[2] == 2.5);
    uint16_t h[2] = {0x4500 /* 5.0 */, 0x3c00 /* 1.0 */}, bf[1] = {0x40a0 /* 5.0 */};
    ck_assert_int_eq(dpc_div_host(h, 2, DPC_FLOAT16, 2), DPC_OK);
    ck_assert(ref_half_to_double(h[0]) == 2.5 && ref_half_to_double(h[1]) == 0.5);
    ck_assert_int_eq(dpc_div_host(bf, 1, DPC_BFLOAT16, 4), DPC_OK);
    ck_assert(dpc_bf16_to_float(bf[0]) == 1.25f);
    int i[1] = {4};
    ck_assert_int_eq(dpc_div_host(i, 1, DPC_INT32, 2), DPC_ERR_UNSUPPORTED);
    ck_assert_int_eq(dpc_div_host(f, 1, DPC_FLOAT, 0), DPC_ERR_ARG);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("reduce");
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_half_to_float_exhaustive);
    tcase_add_test(tc, test_float_to_half_rounding);
    tcase_add_test(tc, test_bf16);
    tcase_add_loop_test(tc, test_kernels, 0, DPC_DTYPE_COUNT * DPC_OP_COUNT);
    tcase_add_test(tc, test_operand_order);
    tcase_add_test(tc, test_div);
    tcase_add_test(tc, test_user_op);
    suite_add_tcase(s, tc);
    return check_run(s);
}
