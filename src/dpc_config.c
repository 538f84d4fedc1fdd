#include "config.h"
#include "dpc_config.h"
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dpc_config_defaults(dpc_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->cost = dpc_cost_model_defaults();
    cfg->log_level = 1;
    cfg->timeout_s = DPC_DEFAULT_TIMEOUT_S;
    cfg->seg_bytes = DPC_DEFAULT_SEG_BYTES;
    cfg->progress_thread = true;
    cfg->one_sided = true;
    cfg->device_reduce = true;
    cfg->ipc = true;
    cfg->ipc_min = DPC_DEFAULT_IPC_MIN;
    cfg->shm = true;
    cfg->shm_max = DPC_DEFAULT_SHM_MAX;
}

void dpc_config_algo_var(dpc_coll_t c, char *buf, size_t len)
{
    const char *name = dpc_coll_name(c);
    size_t n = (size_t)snprintf(buf, len, "DPCOLL_%s_ALGORITHM", name);
    for (size_t i = 7; i < n && i < len; i++)
        buf[i] = (char)toupper((unsigned char)buf[i]);
}

static int parse_bool(const char *v, bool *out)
{
    if (!strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcasecmp(v, "on"))
        *out = true;
    else if (!strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcasecmp(v, "off") || !*v)
        *out = false;
    else
        return -1;
    return 0;
}

dpc_status_t dpc_config_read(dpc_config_t *cfg, char *err, size_t errlen)
{
    const char *v;
    char *end;
    dpc_config_defaults(cfg);
    if ((v = getenv("DPCOLL_DISABLE")) && parse_bool(v, &cfg->disable)) {
        snprintf(err, errlen, "DPCOLL_DISABLE=%s: expected 0 or 1", v);
        return DPC_ERR_ARG;
    }
    if ((v = getenv("DPCOLL_STATS")) && parse_bool(v, &cfg->stats)) {
        snprintf(err, errlen, "DPCOLL_STATS=%s: expected 0 or 1", v);
        return DPC_ERR_ARG;
    }
    if ((v = getenv("DPCOLL_EXPLAIN")) && parse_bool(v, &cfg->explain)) {
        snprintf(err, errlen, "DPCOLL_EXPLAIN=%s: expected 0 or 1", v);
        return DPC_ERR_ARG;
    }
    if ((v = getenv("DPCOLL_PROGRESS_THREAD")) && parse_bool(v, &cfg->progress_thread)) {
        snprintf(err, errlen, "DPCOLL_PROGRESS_THREAD=%s: expected 0 or 1", v);
        return DPC_ERR_ARG;
    }
    if ((v = getenv("DPCOLL_ONE_SIDED")) && parse_bool(v, &cfg->one_sided)) {
        snprintf(err, errlen, "DPCOLL_ONE_SIDED=%s: expected 0 or 1", v);
        return DPC_ERR_ARG;
    }
    if ((v = getenv("DPCOLL_SHM")) && parse_bool(v, &cfg->shm)) {
        snprintf(err, errlen, "DPCOLL_SHM=%s: expected 0 or 1", v);
        return DPC_ERR_ARG;
    }
    if ((v = getenv("DPCOLL_SHM_MAX"))) {
        unsigned long long b = strtoull(v, &end, 10);
        if (!*v || *end || b > DPC_MAX_SHM_MAX) {
            snprintf(err, errlen, "DPCOLL_SHM_MAX=%s: expected bytes from 0 to %u", v,
                     DPC_MAX_SHM_MAX);
            return DPC_ERR_ARG;
        }
        cfg->shm_max = (size_t)b;
    }
    if ((v = getenv("DPCOLL_DEVICE_REDUCE")) && parse_bool(v, &cfg->device_reduce)) {
        snprintf(err, errlen, "DPCOLL_DEVICE_REDUCE=%s: expected 0 or 1", v);
        return DPC_ERR_ARG;
    }
    if ((v = getenv("DPCOLL_IPC")) && parse_bool(v, &cfg->ipc)) {
        snprintf(err, errlen, "DPCOLL_IPC=%s: expected 0 or 1", v);
        return DPC_ERR_ARG;
    }
    if ((v = getenv("DPCOLL_IPC_MIN"))) {
        unsigned long long b = strtoull(v, &end, 10);
        if (!*v || *end || *v == '-') {
            snprintf(err, errlen, "DPCOLL_IPC_MIN=%s: expected bytes (an integer >= 0)", v);
            return DPC_ERR_ARG;
        }
        cfg->ipc_min = (size_t)b;
    }
    if ((v = getenv("DPCOLL_TUNE_FILE")) && *v) {
        char why[200];
        if (dpc_tune_read(v, &cfg->cost, why, sizeof(why)) != DPC_OK) {
            snprintf(err, errlen, "DPCOLL_TUNE_FILE=%s: %s", v, why);
            return DPC_ERR_ARG;
        }
        snprintf(cfg->tune_file, sizeof(cfg->tune_file), "%s", v);
    }
    if ((v = getenv("DPCOLL_LOG_LEVEL"))) {
        long l = strtol(v, &end, 10);
        if (*end || l < 0 || l > 3) {
            snprintf(err, errlen, "DPCOLL_LOG_LEVEL=%s: expected 0 (errors) to 3 (debug)", v);
            return DPC_ERR_ARG;
        }
        cfg->log_level = (int)l;
    }
    if ((v = getenv("DPCOLL_TIMEOUT"))) {
        errno = 0;
        double t = strtod(v, &end);
        if (*end || errno || t < 0) {
            snprintf(err, errlen, "DPCOLL_TIMEOUT=%s: expected seconds >= 0 (0 = no timeout)", v);
            return DPC_ERR_ARG;
        }
        cfg->timeout_s = t;
    }
    if ((v = getenv("DPCOLL_SEG_BYTES"))) {
        unsigned long long b = strtoull(v, &end, 10);
        if (*end || b < 64 || b > (1ull << 32)) {
            snprintf(err, errlen, "DPCOLL_SEG_BYTES=%s: expected bytes in [64, 4294967296]", v);
            return DPC_ERR_ARG;
        }
        cfg->seg_bytes = (size_t)b;
    }
    for (int c = 0; c < DPC_COLL_COUNT; c++) {
        char var[64];
        dpc_config_algo_var(c, var, sizeof(var));
        if (!(v = getenv(var)) || !*v || !strcmp(v, "auto"))
            continue;
        cfg->force[c] = dpc_algo_find(c, v);
        if (!cfg->force[c]) {
            size_t off = (size_t)snprintf(err, errlen, "%s=%s: no such algorithm; valid: auto", var, v);
            for (const dpc_algo_t *const *al = dpc_algos(); *al && off < errlen; al++)
                if ((*al)->coll == (dpc_coll_t)c)
                    off += (size_t)snprintf(err + off, errlen - off, ", %s", (*al)->name);
            return DPC_ERR_ARG;
        }
    }
    return DPC_OK;
}

static int algo_index(const dpc_algo_t *al)
{
    if (!al)
        return -1;
    for (int i = 0; dpc_algos()[i]; i++)
        if (dpc_algos()[i] == al)
            return i;
    return -1;
}

void dpc_config_pack_shared(const dpc_config_t *cfg, long long *v)
{
    v[0] = cfg->disable;
    v[1] = (long long)(cfg->timeout_s * 1000);
    v[2] = (long long)cfg->seg_bytes;
    /* the cost constants decide the algorithm: bit for bit the same */
    const double d[6] = {cfg->cost.small.alpha, cfg->cost.small.beta, cfg->cost.small.gamma,
                         cfg->cost.large.alpha, cfg->cost.large.beta, cfg->cost.large.gamma};
    memcpy(&v[3], d, sizeof(d));
    v[9] = (long long)cfg->cost.large_bytes;
    for (int c = 0; c < DPC_COLL_COUNT; c++)
        v[10 + c] = algo_index(cfg->force[c]);
    v[10 + DPC_COLL_COUNT] = cfg->one_sided;
    const double h[3] = {cfg->cost.huge.alpha, cfg->cost.huge.beta, cfg->cost.huge.gamma};
    memcpy(&v[11 + DPC_COLL_COUNT], h, sizeof(h));
    v[14 + DPC_COLL_COUNT] = (long long)cfg->cost.huge_bytes;
    v[15 + DPC_COLL_COUNT] = cfg->tune_file[0] != 0;   /* constants from a file */
    v[16 + DPC_COLL_COUNT] = cfg->device_reduce;
    v[17 + DPC_COLL_COUNT] = cfg->shm;
    v[18 + DPC_COLL_COUNT] = (long long)cfg->shm_max;
    v[19 + DPC_COLL_COUNT] = cfg->ipc;
    v[20 + DPC_COLL_COUNT] = (long long)cfg->ipc_min;
    const double r[3] = {cfg->cost.small.alpha_rndv, cfg->cost.large.alpha_rndv,
                         cfg->cost.huge.alpha_rndv};
    memcpy(&v[21 + DPC_COLL_COUNT], r, sizeof(r));
}

void dpc_config_unpack_shared(dpc_config_t *cfg, const long long *v)
{
    cfg->disable = v[0] != 0;
    cfg->timeout_s = (double)v[1] / 1000;
    cfg->seg_bytes = (size_t)v[2];
    double d[6];
    memcpy(d, &v[3], sizeof(d));
    double r[3];
    memcpy(r, &v[21 + DPC_COLL_COUNT], sizeof(r));
    cfg->cost.small = (dpc_cost_params_t){.alpha = d[0], .beta = d[1], .gamma = d[2], .alpha_rndv = r[0]};
    cfg->cost.large = (dpc_cost_params_t){.alpha = d[3], .beta = d[4], .gamma = d[5], .alpha_rndv = r[1]};
    cfg->cost.large_bytes = (size_t)v[9];
    for (int c = 0; c < DPC_COLL_COUNT; c++)
        cfg->force[c] = v[10 + c] >= 0 ? dpc_algos()[v[10 + c]] : NULL;
    cfg->one_sided = v[10 + DPC_COLL_COUNT] != 0;
    double h[3];
    memcpy(h, &v[11 + DPC_COLL_COUNT], sizeof(h));
    cfg->cost.huge = (dpc_cost_params_t){.alpha = h[0], .beta = h[1], .gamma = h[2], .alpha_rndv = r[2]};
    cfg->cost.huge_bytes = (size_t)v[14 + DPC_COLL_COUNT];
    cfg->device_reduce = v[16 + DPC_COLL_COUNT] != 0;
    cfg->shm = v[17 + DPC_COLL_COUNT] != 0;
    cfg->shm_max = (size_t)v[18 + DPC_COLL_COUNT];
    cfg->ipc = v[19 + DPC_COLL_COUNT] != 0;
    cfg->ipc_min = (size_t)v[20 + DPC_COLL_COUNT];
    if (!v[15 + DPC_COLL_COUNT])
        cfg->tune_file[0] = 0;
    else if (!cfg->tune_file[0])
        snprintf(cfg->tune_file, sizeof(cfg->tune_file), "(rank 0's)");
}

dpc_status_t dpc_tune_read(const char *path, dpc_cost_model_t *m, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot open it");
        return DPC_ERR_ARG;
    }
    dpc_cost_model_t t = dpc_cost_model_defaults();
    double large[3] = {-1, -1, -1}, huge[3] = {-1, -1, -1}, rndv[3] = {-1, -1, -1};
    char line[256];
    int lineno = 0, seen = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char key[32];
        double val;
        int n = sscanf(line, " %31[a-z_] = %lf", key, &val);
        if (n <= 0)
            continue;     /* blank or comment */
        double *dst = !strcmp(key, "alpha") ? &t.small.alpha : !strcmp(key, "beta") ? &t.small.beta
                    : !strcmp(key, "gamma") ? &t.small.gamma : !strcmp(key, "alpha_large") ? &large[0]
                    : !strcmp(key, "beta_large") ? &large[1] : !strcmp(key, "gamma_large") ? &large[2]
                    : !strcmp(key, "alpha_huge") ? &huge[0] : !strcmp(key, "beta_huge") ? &huge[1]
                    : !strcmp(key, "gamma_huge") ? &huge[2] : !strcmp(key, "alpha_rndv") ? &rndv[0]
                    : !strcmp(key, "alpha_rndv_large") ? &rndv[1]
                    : !strcmp(key, "alpha_rndv_huge") ? &rndv[2] : NULL;
        bool is_huge = !strcmp(key, "huge_bytes");
        bool is_bytes = is_huge || !strcmp(key, "large_bytes");
        if (n != 2 || (!dst && !is_bytes) || !(val >= 0) || (dst && val > 1)) {
            snprintf(err, errlen, "line %d: expected 'alpha|alpha_rndv|beta|gamma[_large|_huge] = "
                     "seconds' or 'large_bytes|huge_bytes = bytes'", lineno);
            fclose(f);
            return DPC_ERR_ARG;
        }
        if (is_huge)
            t.huge_bytes = (size_t)val;
        else if (is_bytes)
            t.large_bytes = (size_t)val;
        else
            *dst = val;
        seen++;
    }
    fclose(f);
    if (!seen) {
        snprintf(err, errlen, "no constants in it");
        return DPC_ERR_ARG;
    }
    t.large.alpha = large[0] >= 0 ? large[0] : t.small.alpha;
    t.large.beta = large[1] >= 0 ? large[1] : t.small.beta;
    t.large.gamma = large[2] >= 0 ? large[2] : t.small.gamma;
    t.huge.alpha = huge[0] >= 0 ? huge[0] : t.large.alpha;
    t.huge.beta = huge[1] >= 0 ? huge[1] : t.large.beta;
    t.huge.gamma = huge[2] >= 0 ? huge[2] : t.large.gamma;
    /* alpha_rndv like the others (_large: the small one's, _huge: the large
     * one's); a file with none of them (an older dpcoll_tune's) prices a
     * rendezvous at DPC_COST_RNDV_ALPHAS of each set's alpha, as then */
    bool any = rndv[0] >= 0 || rndv[1] >= 0 || rndv[2] >= 0;
    t.small.alpha_rndv = rndv[0] >= 0 ? rndv[0] : DPC_COST_RNDV_ALPHAS * t.small.alpha;
    t.large.alpha_rndv = rndv[1] >= 0 ? rndv[1] : any ? t.small.alpha_rndv
                                                      : DPC_COST_RNDV_ALPHAS * t.large.alpha;
    t.huge.alpha_rndv = rndv[2] >= 0 ? rndv[2] : any ? t.large.alpha_rndv
                                                     : DPC_COST_RNDV_ALPHAS * t.huge.alpha;
    *m = t;
    return DPC_OK;
}

dpc_status_t dpc_tune_write(const char *path, const dpc_cost_model_t *m, const char *comment)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return DPC_ERR_ARG;
    const dpc_cost_params_t *r[3] = {&m->small, &m->large, &m->huge};
    static const char *const sfx[3] = {"", "_large", "_huge"};
    fprintf(f, "# libdpcoll cost model constants (DPCOLL_TUNE_FILE)\n# %s\n", comment);
    for (int i = 0; i < 3; i++)
        fprintf(f, "alpha%s = %.6e   # seconds per message\n"
                   "alpha_rndv%s = %.6e   # seconds per message beyond the mailboxes (rendezvous)\n"
                   "beta%s = %.6e    # seconds per byte sent (%.3g GB/s)\n"
                   "gamma%s = %.6e   # seconds per byte reduced (%.3g GB/s)\n",
                sfx[i], r[i]->alpha, sfx[i], r[i]->alpha_rndv, sfx[i], r[i]->beta, r[i]->beta > 0 ? 1e-9 / r[i]->beta : 0,
                sfx[i], r[i]->gamma, r[i]->gamma > 0 ? 1e-9 / r[i]->gamma : 0);
    fprintf(f, "large_bytes = %zu   # calls moving this many bytes or more use the _large set\n",
            m->large_bytes);
    fprintf(f, "huge_bytes = %zu   # ... and this many or more the _huge set (0: none)\n",
            m->huge_bytes);
    return fclose(f) ? DPC_ERR_ARG : DPC_OK;
}
