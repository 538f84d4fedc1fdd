/* Helpers for the MPI integration tests: every rank runs the same cases;
 * mismatches are counted locally and agreed with PMPI_Allreduce before any
 * assertion, so a failure on one rank never leaves the others waiting. */
#ifndef DPC_MPI_UTIL_H
#define DPC_MPI_UTIL_H

#include <check.h>
#include <mpi.h>
#include <stdio.h>

extern int t_rank, t_size;
extern char t_first_failure[512];
extern long t_cases;

/* record a failed case (first one kept for the message) */
void t_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* all ranks: how many failures anywhere; asserts zero with the message */
void t_agree(const char *what);
/* runs the suite in this process (rank 0 reports): how many tests failed */
int t_run(Suite *s);

/* The body of a program's op that does not commute (MPI_Op_create(f, 0)),
 * on elements of two uint32: the map x -> m x + c (m first), composed as
 * inout = in, then inout. Associative and exact modulo 2^32, so MPI's
 * result, the ranks' maps composed in rank order, has one right answer. */
void t_affine_compose(const void *in, void *inout, int len);

/* tests kept in files of their own, for test_mpi_misc's modes */
void add_handle_reuse_test(TCase *tc);   /* handle_reuse.c: threads */
void add_mpi_progress_test(TCase *tc);   /* mpi_progress.c: mpiprogress */

#endif
