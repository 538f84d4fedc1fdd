/* Logging to stderr, prefixed with the rank, filtered by DPCOLL_LOG_LEVEL. */
#ifndef DPC_LOG_H
#define DPC_LOG_H

enum { DPC_LOG_ERROR, DPC_LOG_WARN, DPC_LOG_INFO, DPC_LOG_DEBUG };

void dpc_log_setup(int level, int rank);
int dpc_log_enabled(int level);
void dpc_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
