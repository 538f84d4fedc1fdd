/*
 * Settings read from the environment: the CUDA IPC ones (DPCOLL_IPC,
 * DPCOLL_IPC_MIN), DPCOLL_PUSH_MAX and DPCOLL_AUTOTUNE parse, refuse bad values with a message naming the
 * variable, and travel in the settings every rank takes from rank 0 (the
 * pack/unpack pair MPI_Init uses), so that all ranks decide alike.
 */
#include "config.h"
#include <check.h>
#include "check_run.h"
#include "dpc_config.h"
#include "dpc_autotune.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static dpc_status_t read_with(const char *var, const char *value, dpc_config_t *cfg, char *err,
                              size_t len)
{
    setenv(var, value, 1);
    dpc_config_defaults(cfg);
    dpc_status_t st = dpc_config_read(cfg, err, len);
    unsetenv(var);
    return st;
}

/* Each of the n values of var is refused, with a message naming var. */
static void check_refused(const char *var, const char *const *bad, size_t n)
{
    dpc_config_t cfg;
    char err[256];
    for (size_t i = 0; i < n; i++) {
        err[0] = 0;
        ck_assert_int_eq(read_with(var, bad[i], &cfg, err, sizeof(err)), DPC_ERR_ARG);
        ck_assert_msg(strstr(err, var) != NULL, "%s=%s: %s", var, bad[i], err);
    }
}

START_TEST(test_ipc_settings)
{
    dpc_config_t cfg;
    char err[256] = "";
    dpc_config_defaults(&cfg);
    ck_assert(cfg.ipc);
    ck_assert_uint_eq(cfg.ipc_min, DPC_DEFAULT_IPC_MIN);
    ck_assert_int_eq(read_with("DPCOLL_IPC", "0", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert(!cfg.ipc);
    ck_assert_int_eq(read_with("DPCOLL_IPC_MIN", "1048576", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert_uint_eq(cfg.ipc_min, 1048576);
    ck_assert(cfg.hugepages);
    ck_assert_int_eq(read_with("DPCOLL_HUGEPAGES", "0", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert(!cfg.hugepages);
    ck_assert(!cfg.shm_stream);   /* (off by default: dpc_shm.h) */
    ck_assert_int_eq(read_with("DPCOLL_SHM_STREAM", "1", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert(cfg.shm_stream);
    const char *bad[][2] = {{"DPCOLL_HUGEPAGES", "2"}, {"DPCOLL_SHM_STREAM", "fast"},
                            {"DPCOLL_IPC", "maybe"}, {"DPCOLL_IPC_MIN", "-5"},
                            {"DPCOLL_IPC_MIN", "64k"}, {"DPCOLL_IPC_MIN", ""}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        ck_assert_int_eq(read_with(bad[i][0], bad[i][1], &cfg, err, sizeof(err)), DPC_ERR_ARG);
        ck_assert_msg(strstr(err, bad[i][0]) != NULL, "%s=%s: %s", bad[i][0], bad[i][1], err);
    }
}
END_TEST

/* DPCOLL_PROGRESS_THREAD: 0 or 1 as every switch, or idle (on, on idle CPU
 * time only); anything else refused, naming the variable */
START_TEST(test_progress_thread)
{
    dpc_config_t cfg;
    char err[256] = "";
    dpc_config_defaults(&cfg);
    ck_assert(cfg.progress_thread && !cfg.progress_idle);
    ck_assert_int_eq(read_with("DPCOLL_PROGRESS_THREAD", "idle", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert(cfg.progress_thread && cfg.progress_idle);
    ck_assert_int_eq(read_with("DPCOLL_PROGRESS_THREAD", "IDLE", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert(cfg.progress_thread && cfg.progress_idle);
    ck_assert_int_eq(read_with("DPCOLL_PROGRESS_THREAD", "0", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert(!cfg.progress_thread && !cfg.progress_idle);
    ck_assert_int_eq(read_with("DPCOLL_PROGRESS_THREAD", "on", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert(cfg.progress_thread && !cfg.progress_idle);
    ck_assert_int_eq(read_with("DPCOLL_PROGRESS_THREAD", "idle2", &cfg, err, sizeof(err)),
                     DPC_ERR_ARG);
    ck_assert_msg(strstr(err, "DPCOLL_PROGRESS_THREAD") != NULL, "%s", err);
}
END_TEST

/* DPCOLL_PUSH_MAX: bytes, or unset (no limit), travelling to every rank
 * as it was set */
START_TEST(test_push_max)
{
    dpc_config_t cfg, other;
    char err[256] = "";
    dpc_config_defaults(&cfg);
    ck_assert(cfg.push_max == DPC_PUSH_MAX_ALL);
    ck_assert_int_eq(read_with("DPCOLL_PUSH_MAX", "0", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert_uint_eq(cfg.push_max, 0);
    ck_assert_int_eq(read_with("DPCOLL_PUSH_MAX", "4194304", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert_uint_eq(cfg.push_max, 4194304);
    long long v[DPC_CONFIG_SHARED_INTS];
    dpc_config_pack_shared(&cfg, v);
    dpc_config_defaults(&other);
    dpc_config_unpack_shared(&other, v);
    ck_assert_uint_eq(other.push_max, 4194304);
    dpc_config_defaults(&cfg);
    dpc_config_pack_shared(&cfg, v);
    other.push_max = 0;
    dpc_config_unpack_shared(&other, v);
    ck_assert(other.push_max == DPC_PUSH_MAX_ALL);
    ck_assert_int_eq(read_with("DPCOLL_PUSH_MAX", "18446744073709551615", &cfg, err, sizeof(err)),
                     DPC_OK);
    ck_assert(cfg.push_max == DPC_PUSH_MAX_ALL);
    const char *bad[] = {"-1", "2M", "", "18446744073709551616"};
    check_refused("DPCOLL_PUSH_MAX", bad, sizeof(bad) / sizeof(bad[0]));
}
END_TEST

/* A tune file's measured push limit (push_max, which dpcoll_tune writes)
 * is DPCOLL_PUSH_MAX's default; the variable set wins over it; a file
 * without it leaves the default (no limit); a bad value is refused with
 * its line. */
START_TEST(test_tune_file_push_max)
{
    char path[] = "/tmp/dpc_push_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "alpha = 1e-6\npush_max = 4194304\n");
    fclose(f);
    dpc_config_t cfg;
    char err[256] = "";
    ck_assert_int_eq(read_with("DPCOLL_TUNE_FILE", path, &cfg, err, sizeof(err)), DPC_OK);
    ck_assert_uint_eq(cfg.push_max, 4194304);
    setenv("DPCOLL_PUSH_MAX", "1024", 1);
    ck_assert_int_eq(read_with("DPCOLL_TUNE_FILE", path, &cfg, err, sizeof(err)), DPC_OK);
    unsetenv("DPCOLL_PUSH_MAX");
    ck_assert_uint_eq(cfg.push_max, 1024);
    f = fopen(path, "w");
    fprintf(f, "alpha = 1e-6\n");
    fclose(f);
    ck_assert_int_eq(read_with("DPCOLL_TUNE_FILE", path, &cfg, err, sizeof(err)), DPC_OK);
    ck_assert(cfg.push_max == DPC_PUSH_MAX_ALL);
    const char *bad[] = {"push_max = -1\n", "push_max = 1.5\n", "push_max\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        f = fopen(path, "w");
        fprintf(f, "alpha = 1e-6\n%s", bad[i]);
        fclose(f);
        err[0] = 0;
        ck_assert_int_eq(read_with("DPCOLL_TUNE_FILE", path, &cfg, err, sizeof(err)), DPC_ERR_ARG);
        ck_assert_msg(strstr(err, "line 2") && strstr(err, "push_max"), "%s: %s", bad[i], err);
    }
    unlink(path);
}
END_TEST

/* DPCOLL_AUTOTUNE: measured calls per algorithm, 0 (off, the default) to
 * DPC_AUTOTUNE_MAX_CALLS; it travels from rank 0 (every rank must measure
 * the same calls, or they would run different algorithms in one call) */
START_TEST(test_autotune)
{
    dpc_config_t cfg, other;
    char err[256] = "";
    dpc_config_defaults(&cfg);
    ck_assert_uint_eq(cfg.autotune, 0);
    ck_assert_int_eq(read_with("DPCOLL_AUTOTUNE", "5", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert_uint_eq(cfg.autotune, 5);
    long long v[DPC_CONFIG_SHARED_INTS];
    dpc_config_pack_shared(&cfg, v);
    dpc_config_defaults(&other);
    dpc_config_unpack_shared(&other, v);
    ck_assert_uint_eq(other.autotune, 5);
    char top[16];
    snprintf(top, sizeof(top), "%d", DPC_AUTOTUNE_MAX_CALLS);
    ck_assert_int_eq(read_with("DPCOLL_AUTOTUNE", top, &cfg, err, sizeof(err)), DPC_OK);
    ck_assert_uint_eq(cfg.autotune, DPC_AUTOTUNE_MAX_CALLS);
    char over[16];
    snprintf(over, sizeof(over), "%d", DPC_AUTOTUNE_MAX_CALLS + 1);
    const char *bad[] = {"-1", "yes", "", "3x", over};
    check_refused("DPCOLL_AUTOTUNE", bad, sizeof(bad) / sizeof(bad[0]));
}
END_TEST

/* DPCOLL_AUTOTUNE_PERIOD: seconds, DPC_AUTOTUNE_PERIOD_S by default, 0 to
 * measure once; from rank 0 too (the ranks must measure again at the same
 * call), to the microsecond */
START_TEST(test_autotune_period)
{
    dpc_config_t cfg, other;
    char err[256] = "";
    dpc_config_defaults(&cfg);
    ck_assert(cfg.autotune_period == DPC_AUTOTUNE_PERIOD_S);
    ck_assert_int_eq(read_with("DPCOLL_AUTOTUNE_PERIOD", "0.25", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert(cfg.autotune_period == 0.25);
    long long v[DPC_CONFIG_SHARED_INTS];
    dpc_config_pack_shared(&cfg, v);
    dpc_config_defaults(&other);
    dpc_config_unpack_shared(&other, v);
    ck_assert_msg(other.autotune_period == 0.25, "%g", other.autotune_period);
    ck_assert_int_eq(read_with("DPCOLL_AUTOTUNE_PERIOD", "0", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert(cfg.autotune_period == 0);
    const char *bad[] = {"-1", "soon", "", "2s", "nan", "1e7"};
    check_refused("DPCOLL_AUTOTUNE_PERIOD", bad, sizeof(bad) / sizeof(bad[0]));
}
END_TEST

/* DPCOLL_TEST_NODES: off by default, a count of nodes, rank 0's for all
 * (every rank must place every process alike) */
START_TEST(test_test_nodes)
{
    dpc_config_t cfg, other;
    char err[256] = "";
    dpc_config_defaults(&cfg);
    ck_assert_int_eq(cfg.test_nodes, 0);
    ck_assert_int_eq(read_with("DPCOLL_TEST_NODES", "2", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert_int_eq(cfg.test_nodes, 2);
    long long v[DPC_CONFIG_SHARED_INTS];
    dpc_config_pack_shared(&cfg, v);
    dpc_config_defaults(&other);
    dpc_config_unpack_shared(&other, v);
    ck_assert_int_eq(other.test_nodes, 2);
    ck_assert(!other.test_nodes_cyclic);
    ck_assert_int_eq(read_with("DPCOLL_TEST_NODES", "3:cyclic", &cfg, err, sizeof(err)), DPC_OK);
    ck_assert(cfg.test_nodes == 3 && cfg.test_nodes_cyclic);
    dpc_config_pack_shared(&cfg, v);
    dpc_config_defaults(&other);
    dpc_config_unpack_shared(&other, v);
    ck_assert(other.test_nodes == 3 && other.test_nodes_cyclic);
    const char *bad[] = {"-1", "two", "", "2.5", "1048577", "99999999999999999999", ":cyclic",
                         "2:cyclicx", "2:block"};
    check_refused("DPCOLL_TEST_NODES", bad, sizeof(bad) / sizeof(bad[0]));
}
END_TEST

START_TEST(test_shared_settings_travel)
{
    dpc_config_t root, other;
    dpc_config_defaults(&root);
    dpc_config_defaults(&other);
    root.ipc = false;
    root.ipc_min = 12345;
    root.device_reduce = false;
    root.cost.set[1].alpha_rndv = 2.5e-6;   /* the model decides the algorithm */
    root.cost.set[2].alpha_get = 7e-7;
    root.cost.from[2] = 1u << 22;
    long long v[DPC_CONFIG_SHARED_INTS];
    dpc_config_pack_shared(&root, v);
    dpc_config_unpack_shared(&other, v);
    ck_assert(other.cost.set[1].alpha_rndv == 2.5e-6);
    ck_assert(other.cost.set[0].alpha_rndv == root.cost.set[0].alpha_rndv);
    ck_assert(other.cost.set[2].alpha_get == 7e-7 && other.cost.from[2] == 1u << 22);
    ck_assert(!memcmp(&other.cost, &root.cost, sizeof(root.cost)));
    ck_assert(!other.ipc);
    ck_assert_uint_eq(other.ipc_min, 12345);
    ck_assert(!other.device_reduce);
    /* and a difference shows in the packed form (what MPI_Init compares) */
    long long w[DPC_CONFIG_SHARED_INTS];
    dpc_config_defaults(&other);
    dpc_config_pack_shared(&other, w);
    ck_assert(memcmp(v, w, sizeof(v)) != 0);
    other.ipc = false;
    other.ipc_min = 12345;
    other.device_reduce = false;
    other.cost.set[1].alpha_rndv = 2.5e-6;
    other.cost.set[2].alpha_get = 7e-7;
    other.cost.from[2] = 1u << 22;
    dpc_config_pack_shared(&other, w);
    ck_assert(memcmp(v, w, sizeof(v)) == 0);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("config");
    TCase *tc = tcase_create("settings");
    tcase_add_test(tc, test_ipc_settings);
    tcase_add_test(tc, test_autotune);
    tcase_add_test(tc, test_autotune_period);
    tcase_add_test(tc, test_test_nodes);
    tcase_add_test(tc, test_tune_file_push_max);
    tcase_add_test(tc, test_shared_settings_travel);
    tcase_add_test(tc, test_push_max);
    tcase_add_test(tc, test_progress_thread);
    suite_add_tcase(su, tc);
    return check_run(su);
}
