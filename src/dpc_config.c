#include "config.h"
#include "dpc_config.h"
#include "dpc_autotune.h"
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void dpc_config_defaults(dpc_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->cost = dpc_cost_model_defaults();
    cfg->log_level = 1;
    cfg->timeout_s = DPC_DEFAULT_TIMEOUT_S;
    cfg->seg_bytes = 0;   /* the library's: reduce_seg_bytes, dpc_seg_bytes */
    cfg->progress_thread = true;
    cfg->one_sided = true;
    cfg->device_reduce = true;
    cfg->ipc = true;
    cfg->ipc_min = DPC_DEFAULT_IPC_MIN;
    cfg->shm = true;
    cfg->shm_max = DPC_DEFAULT_SHM_MAX;
    cfg->push_max = DPC_PUSH_MAX_ALL;
    cfg->hugepages = true;
    cfg->autotune_period = DPC_AUTOTUNE_PERIOD_S;
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
    if ((v = getenv("DPCOLL_PROGRESS_THREAD"))) {
        cfg->progress_idle = !strcasecmp(v, "idle");
        if (cfg->progress_idle)
            cfg->progress_thread = true;
        else if (parse_bool(v, &cfg->progress_thread)) {
            snprintf(err, errlen, "DPCOLL_PROGRESS_THREAD=%s: expected 0, 1 or idle", v);
            return DPC_ERR_ARG;
        }
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
    if ((v = getenv("DPCOLL_PUSH_MAX"))) {
        errno = 0;
        unsigned long long b = strtoull(v, &end, 10);
        if (!*v || *end || *v == '-' || errno == ERANGE) {
            snprintf(err, errlen, "DPCOLL_PUSH_MAX=%s: expected bytes (an integer >= 0)", v);
            return DPC_ERR_ARG;
        }
        cfg->push_max = (size_t)b;
    }
    if ((v = getenv("DPCOLL_DEVICE_REDUCE")) && parse_bool(v, &cfg->device_reduce)) {
        snprintf(err, errlen, "DPCOLL_DEVICE_REDUCE=%s: expected 0 or 1", v);
        return DPC_ERR_ARG;
    }
    if ((v = getenv("DPCOLL_SHM_STREAM")) && parse_bool(v, &cfg->shm_stream)) {
        snprintf(err, errlen, "DPCOLL_SHM_STREAM=%s: expected 0 or 1", v);
        return DPC_ERR_ARG;
    }
    if ((v = getenv("DPCOLL_HUGEPAGES")) && parse_bool(v, &cfg->hugepages)) {
        snprintf(err, errlen, "DPCOLL_HUGEPAGES=%s: expected 0 or 1", v);
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
        /* the file's measured push limit, unless DPCOLL_PUSH_MAX says otherwise */
        if (cfg->cost.push_max && !getenv("DPCOLL_PUSH_MAX"))
            cfg->push_max = cfg->cost.push_max;
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
    if ((v = getenv("DPCOLL_AUTOTUNE"))) {
        unsigned long n = strtoul(v, &end, 10);
        if (!*v || *end || n > DPC_AUTOTUNE_MAX_CALLS || v[0] == '-') {
            snprintf(err, errlen, "DPCOLL_AUTOTUNE=%s: expected measured calls per algorithm, "
                     "0 (off) to %d", v, DPC_AUTOTUNE_MAX_CALLS);
            return DPC_ERR_ARG;
        }
        cfg->autotune = (unsigned)n;
    }
    if ((v = getenv("DPCOLL_AUTOTUNE_PERIOD"))) {
        errno = 0;
        double t = strtod(v, &end);
        if (!*v || *end || errno || !(t >= 0) || t > 1e6) {
            snprintf(err, errlen, "DPCOLL_AUTOTUNE_PERIOD=%s: expected seconds, 0 (measure once) "
                     "to 1000000", v);
            return DPC_ERR_ARG;
        }
        cfg->autotune_period = t;
    }
    if ((v = getenv("DPCOLL_TEST_NODES"))) {
        errno = 0;
        long n = strtol(v, &end, 10);
        bool cyclic = !strcmp(end, ":cyclic");
        if (!*v || (*end && !cyclic) || end == v || errno || n < 0 || n > DPC_MAX_TEST_NODES) {
            snprintf(err, errlen, "DPCOLL_TEST_NODES=%s: expected a number of nodes, 0 (where "
                     "the processes are) to %d, and :cyclic to deal the ranks round-robin", v,
                     DPC_MAX_TEST_NODES);
            return DPC_ERR_ARG;
        }
        cfg->test_nodes = (int)n;
        cfg->test_nodes_cyclic = cyclic;
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

/* The shared settings' layout in the packed form. */
enum {
    SH_DISABLE, SH_TIMEOUT, SH_SEG, SH_ONE_SIDED, SH_TUNE_FILE, SH_DEVICE_REDUCE, SH_SHM,
    SH_SHM_MAX, SH_IPC, SH_IPC_MIN, SH_PUSH_MAX, SH_AUTOTUNE, SH_AUTOTUNE_PERIOD,
    SH_TEST_NODES,
    SH_FORCE,                                   /* DPC_COLL_COUNT of them */
    SH_FROM = SH_FORCE + DPC_COLL_COUNT,        /* the sets' thresholds */
    SH_COST = SH_FROM + DPC_COST_SETS,          /* the sets, DPC_COST_NFIELDS doubles each */
    SH_NRULES = SH_COST + DPC_COST_SETS * DPC_COST_NFIELDS,
    SH_RULES,                                   /* DPC_COST_RULES of DPC_CONFIG_RULE_INTS */
    SH_END = SH_RULES + DPC_COST_RULES * DPC_CONFIG_RULE_INTS
};
_Static_assert(SH_END == DPC_CONFIG_SHARED_INTS, "DPC_CONFIG_SHARED_INTS is the packed length");

void dpc_config_pack_shared(const dpc_config_t *cfg, long long *v)
{
    v[SH_DISABLE] = cfg->disable;
    v[SH_TIMEOUT] = (long long)(cfg->timeout_s * 1000);
    v[SH_SEG] = (long long)cfg->seg_bytes;
    v[SH_ONE_SIDED] = cfg->one_sided;
    v[SH_TUNE_FILE] = cfg->tune_file[0] != 0;   /* constants from a file */
    v[SH_DEVICE_REDUCE] = cfg->device_reduce;
    v[SH_SHM] = cfg->shm;
    v[SH_SHM_MAX] = (long long)cfg->shm_max;
    v[SH_IPC] = cfg->ipc;
    v[SH_IPC_MIN] = (long long)cfg->ipc_min;
    v[SH_PUSH_MAX] = (long long)cfg->push_max;   /* no limit: -1 */
    v[SH_AUTOTUNE] = cfg->autotune;
    v[SH_AUTOTUNE_PERIOD] = (long long)(cfg->autotune_period * 1e6 + 0.5);   /* (microseconds) */
    v[SH_TEST_NODES] = cfg->test_nodes_cyclic ? -cfg->test_nodes : cfg->test_nodes;
    for (int c = 0; c < DPC_COLL_COUNT; c++)
        v[SH_FORCE + c] = algo_index(cfg->force[c]);
    /* the cost constants decide the algorithm: bit for bit the same */
    dpc_cost_model_t m = cfg->cost;
    for (int i = 0; i < DPC_COST_SETS; i++) {
        v[SH_FROM + i] = (long long)m.from[i];
        for (int f = 0; f < DPC_COST_NFIELDS; f++)
            memcpy(&v[SH_COST + i * DPC_COST_NFIELDS + f], dpc_cost_field(&m.set[i], f),
                   sizeof(double));
    }
    v[SH_NRULES] = m.nrules;
    for (int i = 0; i < DPC_COST_RULES; i++) {
        long long *r = &v[SH_RULES + i * DPC_CONFIG_RULE_INTS];
        bool on = i < m.nrules;
        r[0] = on ? m.rule[i].coll : 0;
        r[1] = on ? m.rule[i].nranks : 0;
        r[2] = on ? (long long)m.rule[i].lo : 0;
        r[3] = on ? (long long)m.rule[i].hi : 0;
        r[4] = on ? algo_index(m.rule[i].al) : -1;
        r[5] = on ? m.rule[i].calls : 0;
        r[6] = on ? m.rule[i].nodes : 0;
    }
}

void dpc_config_unpack_shared(dpc_config_t *cfg, const long long *v)
{
    cfg->disable = v[SH_DISABLE] != 0;
    cfg->timeout_s = (double)v[SH_TIMEOUT] / 1000;
    cfg->seg_bytes = (size_t)v[SH_SEG];
    cfg->one_sided = v[SH_ONE_SIDED] != 0;
    cfg->device_reduce = v[SH_DEVICE_REDUCE] != 0;
    cfg->shm = v[SH_SHM] != 0;
    cfg->shm_max = (size_t)v[SH_SHM_MAX];
    cfg->ipc = v[SH_IPC] != 0;
    cfg->ipc_min = (size_t)v[SH_IPC_MIN];
    cfg->push_max = (size_t)v[SH_PUSH_MAX];
    cfg->autotune = (unsigned)v[SH_AUTOTUNE];
    cfg->autotune_period = (double)v[SH_AUTOTUNE_PERIOD] / 1e6;
    cfg->test_nodes = (int)(v[SH_TEST_NODES] < 0 ? -v[SH_TEST_NODES] : v[SH_TEST_NODES]);
    cfg->test_nodes_cyclic = v[SH_TEST_NODES] < 0;
    for (int c = 0; c < DPC_COLL_COUNT; c++)
        cfg->force[c] = v[SH_FORCE + c] >= 0 ? dpc_algos()[v[SH_FORCE + c]] : NULL;
    for (int i = 0; i < DPC_COST_SETS; i++) {
        cfg->cost.from[i] = (size_t)v[SH_FROM + i];
        for (int f = 0; f < DPC_COST_NFIELDS; f++)
            memcpy(dpc_cost_field(&cfg->cost.set[i], f), &v[SH_COST + i * DPC_COST_NFIELDS + f],
                   sizeof(double));
    }
    cfg->cost.nrules = (int)v[SH_NRULES];
    for (int i = 0; i < DPC_COST_RULES; i++) {
        const long long *r = &v[SH_RULES + i * DPC_CONFIG_RULE_INTS];
        cfg->cost.rule[i] = (dpc_cost_rule_t){.coll = (int)r[0], .nranks = (int)r[1],
                                              .lo = (size_t)r[2], .hi = (size_t)r[3],
                                              .al = r[4] >= 0 ? dpc_algos()[r[4]] : NULL,
                                              .calls = (unsigned)r[5], .nodes = (int)r[6]};
    }
    if (!v[SH_TUNE_FILE])
        cfg->tune_file[0] = 0;
    else if (!cfg->tune_file[0])
        snprintf(cfg->tune_file, sizeof(cfg->tune_file), "(rank 0's)");
}

/* "choose = COLLECTIVE RANKS[/NODES] LO HI ALGORITHM [CALLS]": a measured
 * choice (dpc_cost_rule_t), for communicators of RANKS ranks on one node or
 * on NODES, bytes as dpc_coll_bytes counts them, for blocking, nonblocking
 * (and persistent) or any calls (the default) */
static dpc_status_t read_choice(const char *line, dpc_cost_model_t *m, int lineno, char *err,
                                size_t errlen)
{
    char coll[40], ranks[24], algo[40], kind[40] = "any", why[120];
    int nranks = 0, nodes = 1, end = 0, used = 0;
    unsigned long long lo, hi;
    const dpc_algo_t *al = NULL;
    int c = -1;
    /* (no minus sign: %llu would take -1 as the largest number) */
    if (!strchr(line, '-') &&
        sscanf(line, " choose = %39s %23s %llu %llu %39s %n%39s %n", coll, ranks, &lo, &hi, algo,
               &end, kind, &end) >= 5 && line[end] == 0 &&
        ((sscanf(ranks, "%d%n", &nranks, &used) == 1 && ranks[used] == 0) ||
         (sscanf(ranks, "%d/%d%n", &nranks, &nodes, &used) == 2 && ranks[used] == 0)))
        c = dpc_coll_from_name(coll);
    if (c >= 0)
        al = dpc_algo_find((dpc_coll_t)c, algo);
    unsigned calls = dpc_calls_from_name(kind);
    if (!al || !calls) {
        snprintf(err, errlen, "line %d: expected 'choose = COLLECTIVE RANKS[/NODES] FROM_BYTES TO_BYTES "
                 "ALGORITHM [blocking|nonblocking|any]' with a collective and one of its "
                 "algorithms (dpcoll_info lists them)", lineno);
        return DPC_ERR_ARG;
    }
    if (dpc_cost_rule_add(m, c, nranks, nodes, (size_t)lo, (size_t)hi, al, calls, why, sizeof(why)) !=
        DPC_OK) {
        snprintf(err, errlen, "line %d: choose: %s", lineno, why);
        return DPC_ERR_ARG;
    }
    return DPC_OK;
}

dpc_status_t dpc_tune_read(const char *path, dpc_cost_model_t *m, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot open it");
        return DPC_ERR_ARG;
    }
    dpc_cost_model_t t = dpc_cost_model_defaults();
    double given[DPC_COST_SETS][DPC_COST_NFIELDS];   /* < 0: not in the file */
    for (int i = 0; i < DPC_COST_SETS; i++)
        for (int k = 0; k < DPC_COST_NFIELDS; k++)
            given[i][k] = -1;
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
        if (!strcmp(key, "push_max")) {
            /* (0, never writing, kept as 1: no call from DPC_PUSH_MIN is so small) */
            if (n != 2 || !(val >= 0) || val > 9.2e18 || val != (double)(long long)val) {
                snprintf(err, errlen, "line %d: expected 'push_max = bytes'", lineno);
                fclose(f);
                return DPC_ERR_ARG;
            }
            t.push_max = val < 1 ? 1 : (size_t)val;
            continue;
        }
        if (n == 1 && !strcmp(key, "choose")) {
            if (read_choice(line, &t, lineno, err, errlen) != DPC_OK) {
                fclose(f);
                return DPC_ERR_ARG;
            }
            continue;
        }
        double *dst = NULL;
        int from = 0;     /* a threshold: its set */
        for (int i = 0; i < DPC_COST_SETS && !dst && !from; i++) {
            char name[32];
            for (int k = 0; k < DPC_COST_NFIELDS && !dst; k++) {
                snprintf(name, sizeof(name), "%s%s", dpc_cost_fields[k].key, dpc_cost_set_suffix[i]);
                if (!strcmp(key, name))
                    dst = &given[i][k];
            }
            snprintf(name, sizeof(name), "%s_bytes", dpc_cost_set_name[i]);
            if (i > 0 && !strcmp(key, name))
                from = i;
        }
        if (n != 2 || (!dst && !from) || !(val >= 0) || (dst && val > 1)) {
            char keys[160] = "";
            for (int k = 0; k < DPC_COST_NFIELDS; k++)
                snprintf(keys + strlen(keys), sizeof(keys) - strlen(keys), "%s%s", k ? "|" : "",
                         dpc_cost_fields[k].key);
            snprintf(err, errlen, "line %d: expected '%s[_large|_huge|_memory] = seconds' or "
                     "'large_bytes|huge_bytes|memory_bytes = bytes'", lineno, keys);
            fclose(f);
            return DPC_ERR_ARG;
        }
        if (from)
            t.from[from] = (size_t)val;
        else
            *dst = val;
        seen++;
    }
    fclose(f);
    if (!seen) {
        snprintf(err, errlen, "no constants in it");
        return DPC_ERR_ARG;
    }
    /* A constant left out of a set is the previous set's (the small set's:
     * the default). One priced in alphas that the file names in no set at
     * all (an older dpcoll_tune's file) is that many of each set's own
     * alpha, as the model priced it then. */
    for (int k = 0; k < DPC_COST_NFIELDS; k++) {
        double alphas = dpc_cost_fields[k].alphas;
        bool any = false;
        for (int i = 0; i < DPC_COST_SETS; i++)
            any |= given[i][k] >= 0;
        for (int i = 0; i < DPC_COST_SETS; i++) {
            dpc_cost_params_t *set = &t.set[i];
            double *v = dpc_cost_field(set, k);
            if (given[i][k] >= 0)
                *v = given[i][k];
            else if (alphas >= 0 && !any)
                *v = alphas * set->alpha;   /* (alpha comes first: already this set's) */
            else if (i > 0)
                *v = *dpc_cost_field(&t.set[i - 1], k);
            else if (alphas >= 0)
                *v = alphas * set->alpha;
        }
    }
    *m = t;
    return DPC_OK;
}

dpc_status_t dpc_tune_write(const char *path, const dpc_cost_model_t *m, const char *comment)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return DPC_ERR_ARG;
    dpc_cost_model_t t = *m;
    fprintf(f, "# libdpcoll cost model constants (DPCOLL_TUNE_FILE)\n# %s\n", comment);
    for (int i = 0; i < DPC_COST_SETS; i++)
        for (int k = 0; k < DPC_COST_NFIELDS; k++) {
            double v = *dpc_cost_field(&t.set[i], k);
            fprintf(f, "%s%s = %.6e   # %s", dpc_cost_fields[k].key, dpc_cost_set_suffix[i], v,
                    dpc_cost_fields[k].what);
            if (dpc_cost_fields[k].per_byte && v > 0)   /* also as a rate */
                fprintf(f, " (%.3g GB/s)", 1e-9 / v);
            fprintf(f, "\n");
        }
    for (int i = 1; i < DPC_COST_SETS; i++)
        fprintf(f, "%s_bytes = %zu   # calls whose buffers span this many bytes or more (per "
                "rank, input and output) use the %s set%s\n",
                dpc_cost_set_name[i], m->from[i], dpc_cost_set_suffix[i], i > 1 ? " (0: none)" : "");
    if (m->push_max)
        fprintf(f, "push_max = %zu   # one-sided allgathers and all-to-alls write into their "
                "peers up to this many bytes of output, and read beyond (DPCOLL_PUSH_MAX, "
                "measured)\n", m->push_max);
    if (m->nrules)
        fprintf(f, "# measured choices: collective, ranks (/nodes where several), from and to bytes (a rank's vector, "
                "inclusive), algorithm, calls;\n# the first that matches and applies is taken "
                "instead of the constants' cheapest\n");
    for (int i = 0; i < m->nrules; i++) {
        char ranks[24];
        snprintf(ranks, sizeof(ranks), m->rule[i].nodes > 1 ? "%d/%d" : "%d", m->rule[i].nranks,
                 m->rule[i].nodes);
        fprintf(f, "choose = %s %s %zu %zu %s %s\n", dpc_coll_name((dpc_coll_t)m->rule[i].coll),
                ranks, m->rule[i].lo, m->rule[i].hi, m->rule[i].al->name,
                dpc_calls_name(m->rule[i].calls));
    }
    return fclose(f) ? DPC_ERR_ARG : DPC_OK;
}
