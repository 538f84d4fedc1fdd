/*
 * Shared-memory mailboxes for the small messages of processes on one node.
 *
 * Why: a small collective is a few messages of tens to thousands of bytes,
 * and UCX's shared-memory path takes about 0.45-0.6 us per message on the
 * reference machine, where a record written into memory the peer polls
 * arrives in 0.18-0.45 us (MPICH's own intranode path is of that kind too).
 *
 * Each process owns one segment (POSIX shared memory) holding one ring per
 * sending process: a single-producer, single-consumer byte ring of records
 * {stamp, tag, length, payload}, 64-byte aligned. A record is written whole
 * and then published by its stamp (its position in the stream, release);
 * the consumer polls the stamp where the next record goes, reads the
 * record and then moves its tail (release), which the producer reads only
 * when the ring looks full. A record that would cross the ring's end is
 * preceded by a pad record up to it.
 *
 * Sleeping: a consumer about to block on something else (UCX's wakeup fd)
 * raises its flag and then looks at its rings once more; a producer that
 * has published and then finds the flag raised takes it down and tells the
 * caller to ring the consumer (dpc_shm_put's return). (The producer does
 * not fence between its record and its look at the flag: a record
 * published in the very instant the consumer goes to sleep waits for the
 * sleep's timeout, which the callers bound to 1 ms.)
 *
 * Matching, queues of unmatched records and waiting senders are the
 * caller's (ucx_glue/dpc_ucx.c): this file is the rings only. Not thread
 * safe on one side of a ring; the two sides are different processes.
 */
#ifndef DPC_SHM_H
#define DPC_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dpc_status.h"

typedef struct dpc_shm dpc_shm_t;

/* A message of at least this many bytes has its payload 64-byte aligned in
 * the ring (copies in and out of aligned lines run faster; smaller ones
 * share the header's line). */
#define DPC_SHM_ALIGNED_FROM 256u
/* The largest message a ring carries (larger ones go by the rendezvous
 * the caller builds on these rings, or by UCX). Why as large as 64 KiB: a
 * message beyond the mailboxes costs a description, the reader's
 * process_vm_readv and a record back, about 5 us more than copying it
 * through a ring on this project's 2-core VM up to 128 KiB (2 ranks,
 * dpcoll_bench -t, ring allgather and pairwise alltoall forced: 32 KiB
 * 5.8 -> 2.2 us, 64 KiB 7.5 -> 3.1, 128 KiB 11.1 -> 5.9, 256 KiB 17.2 ->
 * 10.3: docs/bench/s40). A message takes at most an eighth of a ring
 * (dpc_shm_max_msg), so a sender that runs ahead still has room for
 * several. */
#define DPC_SHM_MAX_MSG 65536u
/* Bytes of each ring, from the number of processes (all agree): 512 KiB
 * up to 16 processes, less beyond so that a segment stays within 8 MiB,
 * never under 64 KiB (eight messages of 8 KiB). Measured on the reference
 * machine, 2 ranks, 2-8 KiB messages: 64 KiB rings made a bcast loop 1.4x
 * and an allgather loop 1.2x slower than 512 KiB ones (a ring lapped that
 * often keeps its lines moving between the two cores' caches, and a sender
 * running ahead soon waits for room). */
size_t dpc_shm_ring_bytes(int nprocs);
/* The largest message the rings of a job of nprocs carry: DPC_SHM_MAX_MSG,
 * or an eighth of a ring where rings are smaller (never under 8 KiB). */
size_t dpc_shm_max_msg(int nprocs);
/* Processes beyond this do not get mailboxes (segments grow with them). */
#define DPC_SHM_MAX_PROCS 256

/* This process's segment, named "<prefix>.<me>", with a ring for each of
 * nprocs senders. The name is removed again by dpc_shm_unlink once every
 * process has attached (the memory lives on while mapped). */
dpc_status_t dpc_shm_create(const char *prefix, int nprocs, int me, dpc_shm_t **shm_p,
                            char *err, size_t errlen);
/* Maps every other process's segment (after all have created theirs). */
dpc_status_t dpc_shm_attach(dpc_shm_t *shm, char *err, size_t errlen);
void dpc_shm_unlink(dpc_shm_t *shm);
void dpc_shm_destroy(dpc_shm_t *shm);

/* What a record carries, kept for the caller (dpc_ucx.c): a message; the
 * description of a large one for the receiver to read from the sender's
 * memory; word that such a read is done. */
enum { DPC_SHM_MSG = 0, DPC_SHM_RNDV = 1, DPC_SHM_FIN = 2 };
/* A DPC_SHM_RNDV record's payload (its tag is the message's); the FIN's
 * tag is the id, its payload the read's status (int32_t). */
typedef struct dpc_shm_rndv {
    uint64_t addr, len;     /* the sender's buffer */
    uint64_t id;            /* its send, for the FIN to name */
} dpc_shm_rndv_t;

/* Writes a record of a kind to process dst's ring from this process.
 * Returns 0 when written, 1 when written and dst was asleep (ring it), -1
 * when the ring is full (try again later, in order).
 * len <= dpc_shm_max_msg(nprocs). */
int dpc_shm_put(dpc_shm_t *shm, int dst, uint64_t tag, unsigned kind, const void *buf,
                size_t len);
/* With dpc_shm_set_streaming(true) (DPCOLL_SHM_STREAM=1; off by default),
 * payloads of this many bytes or more are written into the ring with
 * streaming (non-temporal) stores (dpc_copy), where the machine has them (x86-64).
 * The record's lines go to memory instead of into the writer's cache, and
 * the reader takes them from there; an ordinary copy first takes each line
 * from the reader's cache (it read that part of the ring last), and the
 * reader then takes it back from the writer's. Which is faster depends on
 * whether the two cores share a cache: on this project's 2-core VM, whose
 * cores share one at some times and not at others (docs/bench/s51), 1 MiB
 * exchanged each way in 64 KiB records took 105-186 us streamed in either
 * state, against 102-143 copied while they shared a cache and 226-323
 * while they did not (stream_probe.txt); forced mailbox rings, pairs of
 * runs: the reduce-scatter's 0.56-0.73x the time streamed where the probe
 * said no shared cache and 1.07-1.26x where it said shared, the bcast's
 * scatter-allgather 0.53-0.59x and 1.37-1.90x, the allreduce's ring
 * 0.88-1.06x and 1.05-1.20x (stream_ab_summary.txt). So off by default, for
 * ranks on cores without a shared last-level cache (other sockets, other
 * core complexes) to turn on. Small records are always copied: their
 * reader waits for them, and a line from memory comes later than one from
 * a cache. */
#define DPC_SHM_STREAM_FROM (16u << 10)
void dpc_shm_set_streaming(bool on);

/* dpc_shm_put of a record of len bytes would write it now (and so will,
 * until this process puts another: only the reader moves, making room). */
bool dpc_shm_room(dpc_shm_t *shm, int dst, size_t len);
/* The oldest record from process src, without consuming it: false if none. */
bool dpc_shm_peek(dpc_shm_t *shm, int src, uint64_t *tag, unsigned *kind, const void **data,
                  size_t *len);
/* Consumes the record peek returned. */
void dpc_shm_pop(dpc_shm_t *shm, int src);
/* A record waits in some ring. */
bool dpc_shm_pending(dpc_shm_t *shm);
/* Raises this process's sleeping flag and looks once more: false (flag
 * down again) when a record waits; then do not sleep. */
bool dpc_shm_sleep_begin(dpc_shm_t *shm);
void dpc_shm_sleep_end(dpc_shm_t *shm);
int dpc_shm_nprocs(const dpc_shm_t *shm);

#endif
