#include "config.h"
#include "dpc_log.h"
#include <stdarg.h>
#include <stdio.h>

/* process-wide by nature (one stderr per process); set once at init */
static int log_level = DPC_LOG_WARN, log_rank = -1;

void dpc_log_setup(int level, int rank)
{
    log_level = level;
    log_rank = rank;
}

int dpc_log_enabled(int level)
{
    return level <= log_level;
}

void dpc_log(int level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    if (level > log_level)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "libdpcoll[%d] %s: %s\n", log_rank, names[level], line);
}
