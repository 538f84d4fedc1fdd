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

#include <mpi.h>
#include <stddef.h>

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

/* 1 when collectives run on libdpcoll (after MPI_Init, unless DPCOLL_DISABLE
 * or UCX could not start on some rank), 0 when they go to the MPI library. */
DPCOLL_API int dpcoll_active(void);

/* Force an algorithm for one collective from now on ("auto": back to the
 * cost model), like DPCOLL_<COLL>_ALGORITHM does at start-up. Collective
 * names: allreduce, reduce_scatter_block, reduce_scatter, allgather,
 * allgatherv, bcast, alltoall, alltoallv. Every rank of a communicator must
 * make the same call before its next collective on it. Returns MPI_SUCCESS,
 * or MPI_ERR_ARG for an unknown collective or algorithm. */
DPCOLL_API int dpcoll_set_algorithm(const char *collective, const char *algorithm);

/* From now on, one-sided allgathers and all-to-alls whose output is 256 KiB
 * to `bytes` (the all-to-alls at most 4 MiB) write their blocks into their
 * peers' outputs, and read them beyond (like DPCOLL_PUSH_MAX at start-up; (size_t)-1: no limit, 0: always
 * read). Which is faster depends on the machine; dpcoll_tune measures it.
 * Every rank of a communicator must make the same call before its next
 * collective on it. Returns MPI_SUCCESS. */
DPCOLL_API int dpcoll_set_push_max(size_t bytes);

/* The message of the last error libdpcoll raised on the calling thread
 * ("MPI_Allreduce: count is negative (-1)"), or "" if none. Calls that fail
 * return the MPI error class; this says which argument was wrong. */
DPCOLL_API const char *dpcoll_error_message(void);

/* The algorithm the last collective on libdpcoll used on the calling thread
 * ("ring", ...), or "" if none ran yet. */
DPCOLL_API const char *dpcoll_last_algorithm(void);

/* An average reduction op for MPI_Allreduce, MPI_Reduce_scatter and
 * MPI_Reduce_scatter_block: the sum over the communicator, then one division
 * by its size on every rank (so every rank gets the same bits). Floating-point
 * data only: float, double, long double, MPIX_C_FLOAT16, dpcoll's bfloat16.
 * Valid between MPI_Init and MPI_Finalize (MPI_OP_NULL otherwise). */
DPCOLL_API MPI_Op dpcoll_op_avg(void);

/* A bfloat16 datatype (2 bytes: the upper half of an IEEE float), reduced
 * with float accumulation (SUM, PROD, MIN, MAX, and dpcoll_op_avg). Valid
 * between MPI_Init and MPI_Finalize (MPI_DATATYPE_NULL otherwise). Its
 * reductions need libdpcoll active: the MPI library itself has no bfloat16
 * (with DPCOLL_DISABLE it moves such data, but refuses to reduce it). */
DPCOLL_API MPI_Datatype dpcoll_type_bfloat16(void);

/* The i-th algorithm libdpcoll has for a collective (i from 0), or NULL past
 * the last one or for an unknown collective. */
DPCOLL_API const char *dpcoll_algorithm_name(const char *collective, int i);

/* The cost model's predicted time, in seconds, of one call on comm with
 * `algorithm` ("auto" or NULL: the one the model picks), as libdpcoll
 * prices it (comm's size and transport, the constants in effect). count is
 * as the MPI call takes it: allreduce and bcast the whole vector,
 * reduce_scatter_block, allgather and alltoall one rank's block, of
 * datatype (reductions priced as a sum); the v-variants (reduce_scatter,
 * allgatherv, alltoallv) `count` from every rank, as if their counts were
 * equal (dpcoll_predictv takes unequal ones). Negative when the algorithm does
 * not apply to the call, an argument is wrong, or libdpcoll is not active.
 * Local, except the first time libdpcoll meets comm (as in its first
 * collective there, every rank of comm must then make the call). */
DPCOLL_API double dpcoll_predict(const char *collective, const char *algorithm, int count,
                                 MPI_Datatype datatype, MPI_Comm comm);

/* dpcoll_predict for a v-variant whose counts all ranks share:
 * "reduce_scatter" and "allgatherv", counts[i] elements of datatype for
 * rank i of comm (MPI_Reduce_scatter's and MPI_Allgatherv's recvcounts),
 * priced by what they make the busiest rank do (unequal blocks cost more
 * than equal ones of the same total). Negative for any other collective
 * (an alltoallv's counts are each rank's own), a negative count, or where
 * dpcoll_predict is. */
DPCOLL_API double dpcoll_predictv(const char *collective, const char *algorithm,
                                  const int counts[], MPI_Datatype datatype, MPI_Comm comm);

/* The nodes comm spans as libdpcoll sees them (hosts, or DPCOLL_TEST_NODES):
 * returns their number (1: all on one node), and where node_of is not NULL
 * (comm's size entries) each rank's node, numbered in the order of each
 * node's lowest rank; where eager_bytes is not NULL, the largest message
 * that goes without a rendezvous among comm's ranks (the mailboxes' limit
 * on one node, UCX's eager limit across nodes). -1 when libdpcoll is not
 * active or comm is not an intracommunicator. Local, except the first time
 * libdpcoll meets comm (as in its first collective). */
DPCOLL_API int dpcoll_comm_nodes(MPI_Comm comm, int node_of[], size_t *eager_bytes);

#ifdef __cplusplus
}
#endif

#endif /* DPCOLL_H */
