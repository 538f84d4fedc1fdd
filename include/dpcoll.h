/*
 * libdpcoll public API.
 *
 * Most programs never include this header: they call the ordinary MPI_*
 * collectives and libdpcoll intercepts them (LD_PRELOAD or -ldpcoll before
 * -lmpi). This header carries the version and the few entry points that MPI
 * itself has no name for.
 */
#ifndef DPCOLL_H
#define DPCOLL_H

#ifdef __cplusplus
extern "C" {
#endif

#define DPCOLL_VERSION_MAJOR 0
#define DPCOLL_VERSION_MINOR 1
#define DPCOLL_VERSION_PATCH 0
#define DPCOLL_VERSION ((DPCOLL_VERSION_MAJOR * 10000) + (DPCOLL_VERSION_MINOR * 100) + DPCOLL_VERSION_PATCH)

#if defined(__GNUC__)
#define DPCOLL_API __attribute__((visibility("default")))
#else
#define DPCOLL_API
#endif

/* "0.1.0": the version of the library actually loaded (not of this header). */
DPCOLL_API const char *dpcoll_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* DPCOLL_H */
