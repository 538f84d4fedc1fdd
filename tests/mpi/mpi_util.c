#include "config.h"
#include "mpi_util.h"
#include <stdint.h>
#include <stdarg.h>
#include <string.h>

int t_rank, t_size;
char t_first_failure[512];
long t_cases;
static int t_failures;

void t_fail(const char *fmt, ...)
{
    if (!t_failures++) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t_first_failure, sizeof(t_first_failure), fmt, ap);
        va_end(ap);
    }
}

void t_agree(const char *what)
{
    int all = 0, mine = t_failures, who = mine ? t_rank : t_size;
    PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int first = t_size;
    PMPI_Allreduce(&who, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    char msg[512] = "";
    if (first < t_size) {
        if (t_rank == first)
            memcpy(msg, t_first_failure, sizeof(msg));
        PMPI_Bcast(msg, sizeof(msg), MPI_CHAR, first, MPI_COMM_WORLD);
    }
    t_failures = 0;
    t_first_failure[0] = 0;
    ck_assert_msg(all == 0, "%s: %d failures on %d ranks; first (rank %d): %s", what, all, t_size,
                  first, msg);
}

void t_affine_compose(const void *in, void *inout, int len)
{
    const uint32_t *x = in;
    uint32_t *y = inout;
    for (int i = 0; i < len; i++) {
        uint32_t m = y[2 * i];
        y[2 * i + 1] = m * x[2 * i + 1] + y[2 * i + 1];
        y[2 * i] = m * x[2 * i];
    }
}

int t_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);   /* never fork an MPI process */
    srunner_run_all(sr, t_rank == 0 ? CK_NORMAL : CK_SILENT);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed;
}
