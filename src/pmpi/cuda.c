/*
 * CUDA support in the shim: loading the plugin (see dpc_cuda.h), telling
 * device buffers from host ones, and staging device buffers through host
 * copies.
 *
 * The staging here is the plain version of the data path: every device
 * buffer of a call is copied to pinned host memory, the call runs on the
 * host copies (any algorithm, any mix of device and host buffers across
 * ranks), and the results are copied back. Host code never touches device
 * memory. Each rank decides for its own buffers only, so ranks may differ.
 */
#include "config.h"
#include "shim.h"
#include "dpc_cuda.h"
#include "dpc_log.h"
#include "stage.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const dpc_cuda_plugin_t *dpc_cuda;
static void *stream;
static char status[256] = "not built with CUDA";

void dpc_cuda_load(void)
{
    const char *v = getenv("DPCOLL_CUDA"), *env = getenv("DPCOLL_CUDA_PLUGIN");
    if (v && !strcmp(v, "0")) {
        snprintf(status, sizeof(status), "off (DPCOLL_CUDA=0)");
        return;
    }
#ifndef DPC_HAVE_CUDA
    if (!env || !*env)      /* (a plugin named explicitly loads in any build: tests) */
        return;
#endif
    const char *paths[] = {env,
#ifdef DPC_HAVE_CUDA
                           DPC_PKGLIBDIR "/libdpcoll_cuda.so", DPC_BUILDDIR "/.libs/libdpcoll_cuda.so"
#endif
    };
    void *h = NULL;
    char err[200] = "not found";
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && !h; i++) {
        if (!paths[i] || !*paths[i])
            continue;
        if (!(h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL)))
            snprintf(err, sizeof(err), "%s", dlerror());
    }
    dpc_cuda_plugin_get_fn get = h ? (dpc_cuda_plugin_get_fn)dlsym(h, DPC_CUDA_PLUGIN_SYMBOL) : NULL;
    const dpc_cuda_plugin_t *p = get ? get(DPC_CUDA_PLUGIN_VERSION) : NULL;
    char why[200] = "";
    int n = p ? p->init(why, sizeof(why)) : -1;
    if (p && n > 0 && p->stream_create(&stream) == 0) {
        dpc_cuda = p;
        snprintf(status, sizeof(status), "on, %d device%s", n, n > 1 ? "s" : "");
        return;
    }
    /* no library, no driver or no device: host buffers only, said once */
    snprintf(status, sizeof(status), "off: %s", !h ? err : !p ? "plugin version mismatch" : why);
    if (dpc_g.world_rank == 0)
        dpc_log(DPC_LOG_INFO, "CUDA %s; device buffers are not handled in this run", status);
    /* the plugin stays loaded: unloading the CUDA runtime mid-process is not safe */
}

bool dpc_cuda_is_device(const void *p)
{
    return dpc_cuda && p && p != MPI_IN_PLACE && dpc_cuda->is_device(p);
}

/* [lo, hi) bytes from buf that n blocks of counts[i] elements at displs[i]
 * extents (or count elements) of dt cover. */
static int span(MPI_Datatype dt, int n, const int *counts, int count, const int *displs,
                MPI_Aint *lo, MPI_Aint *hi)
{
    MPI_Aint lb, ext, tlb, text;
    if (PMPI_Type_get_extent(dt, &lb, &ext) || PMPI_Type_get_true_extent(dt, &tlb, &text))
        return MPI_ERR_TYPE;
    *lo = 0;
    *hi = 0;
    bool any = false;
    for (int i = 0; i < (counts ? n : 1); i++) {
        int c = counts ? counts[i] : count;
        if (c <= 0)
            continue;
        MPI_Aint at = (displs ? displs[i] : 0) * ext, first = at + tlb,
                 last = at + (MPI_Aint)(c - 1) * ext + tlb + text;
        if (ext < 0) {   /* negative extents run backwards */
            MPI_Aint t = first;
            first = at + (MPI_Aint)(c - 1) * ext + tlb;
            last = t + text;
        }
        *lo = any && *lo < first ? *lo : first;
        *hi = any && *hi > last ? *hi : last;
        any = true;
    }
    return MPI_SUCCESS;
}

int dpc_stage_in(dpc_stage_t *st, const void *dev, MPI_Datatype dt, int n, const int *counts,
                 int count, const int *displs, bool copy_in, void **host)
{
    memset(st, 0, sizeof(*st));
    st->dev = (void *)dev;
    int rc = span(dt, n, counts, count, displs, &st->lo, &st->hi);
    if (rc)
        return rc;
    size_t len = (size_t)(st->hi - st->lo);
    if ((rc = dpc_cuda->host_alloc((void **)&st->host, len)) != 0) {
        st->host = NULL;
        return MPI_ERR_NO_MEM;
    }
    if (copy_in && len && ((rc = dpc_cuda->copy_async(st->host, (char *)dev + st->lo, len, stream)) ||
                           (rc = dpc_cuda->stream_sync(stream)))) {
        dpc_log(DPC_LOG_ERROR, "device to host copy: %s", dpc_cuda->error_string(rc));
        return MPI_ERR_OTHER;
    }
    *host = st->host - st->lo;    /* the same offsets as the device buffer */
    return MPI_SUCCESS;
}

int dpc_stage_out(dpc_stage_t *st)
{
    size_t len = (size_t)(st->hi - st->lo);
    int rc;
    if (len && ((rc = dpc_cuda->copy_async((char *)st->dev + st->lo, st->host, len, stream)) ||
                (rc = dpc_cuda->stream_sync(stream)))) {
        dpc_log(DPC_LOG_ERROR, "host to device copy: %s", dpc_cuda->error_string(rc));
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

void dpc_stage_free(dpc_stage_t *st)
{
    if (st->host)
        dpc_cuda->host_free(st->host);
    st->host = NULL;
}

int dpc_stage_pair(MPI_Comm comm, const char *call, dpc_mode_t mode, dpc_stage_t *ss,
                   const void *sbuf, dpc_span_t sd, void **hs, dpc_stage_t *rs, void *rbuf,
                   dpc_span_t rd, void **hr)
{
    /* a persistent request would need staging at every MPI_Start */
    if (mode == DPC_PERSISTENT)
        return dpc_raise(comm, MPI_ERR_BUFFER, "%s: persistent collectives on device buffers "
                         "are not supported yet (use the blocking or nonblocking form)", call);
    memset(ss, 0, sizeof(*ss));
    memset(rs, 0, sizeof(*rs));
    *hs = (void *)sbuf;
    *hr = rbuf;
    int err = MPI_SUCCESS;
    /* the receive side is filled too: parts of its span the call does not
     * write (gaps of a datatype, between blocks) go back unchanged */
    if (dpc_cuda_is_device(sbuf))
        err = dpc_stage_in(ss, sbuf, sd.dt, sd.n, sd.counts, sd.count, sd.displs, true, hs);
    if (!err && dpc_cuda_is_device(rbuf))
        err = dpc_stage_in(rs, rbuf, rd.dt, rd.n, rd.counts, rd.count, rd.displs, true, hr);
    if (err) {
        dpc_stage_free(ss);
        dpc_stage_free(rs);
        return dpc_raise(comm, err, "%s: cannot stage a device buffer through host memory", call);
    }
    return MPI_SUCCESS;
}

int dpc_stage_done(MPI_Comm comm, const char *call, dpc_stage_t *ss, dpc_stage_t *rs, int err,
                   dpc_mode_t mode, MPI_Request *req)
{
    if (!err && rs->host && (err = dpc_stage_out(rs)))
        err = dpc_raise(comm, err, "%s: cannot copy the result back to the device", call);
    dpc_stage_free(ss);
    dpc_stage_free(rs);
    if (err || mode == DPC_BLOCKING)
        return err;
    return dpc_done_request(req);   /* ran to the end already */
}
