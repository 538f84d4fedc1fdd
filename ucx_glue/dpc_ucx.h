/*
 * The UCX transport: a ucp context and worker of libdpcoll's own (separate
 * from the ones MPICH uses inside), worker addresses exchanged by the caller,
 * endpoints created on the first send to a peer, tagged send/receive with
 * completion callbacks, progress that blocks on the worker's wakeup fd
 * instead of spinning, and an orderly teardown.
 *
 * Tag layout (64 bits), so concurrent and successive collectives never cross:
 *   63..44  source rank in the communicator (20 bits; UCX tags carry no source)
 *   43..32  communicator context id (12 bits), agreed by all members
 *   31..20  collective sequence number on that communicator (12 bits)
 *   19..0   step tag, chosen by the algorithm (DPC_STEP_TAG_BITS)
 * The schedule's tag_base supplies bits 43..20; this file adds the source.
 *
 * Not thread safe by itself: the caller serializes calls on one dpc_ucx_t.
 */
#ifndef DPC_UCX_H
#define DPC_UCX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dpc_transport.h"

#define DPC_UCX_SRC_SHIFT 44
#define DPC_UCX_CTX_SHIFT 32
#define DPC_UCX_CTX_BITS 12
#define DPC_UCX_SEQ_SHIFT 20
#define DPC_UCX_SEQ_BITS 12
#define DPC_UCX_MAX_RANKS (1 << 20)

typedef struct dpc_ucx dpc_ucx_t;

/* single_node: every process of the job is on this node, so shared memory
 * transports suffice (unless DPCOLL_UCX_TLS or UCX_TLS says otherwise). */
dpc_status_t dpc_ucx_create(int thread_multi, int single_node, dpc_ucx_t **ux_p, char *err,
                            size_t errlen);
/* This worker's address, to be exchanged with every process. */
dpc_status_t dpc_ucx_address(dpc_ucx_t *ux, const void **addr, size_t *len);
/* All processes' addresses: process i's is at addrs + offs[i], lens[i] bytes
 * (copied). Endpoints are created later, on first use. */
dpc_status_t dpc_ucx_set_peers(dpc_ucx_t *ux, int nprocs, const char *addrs,
                               const size_t *offs, const size_t *lens);
/* One-sided reads by cross-memory attach (dpc_cma.h) for groups created
 * from now on: pids[i] is process i's, or 0 for one this process cannot
 * read (on another node), the two sides of every pair agreeing; NULL
 * turns them off. A group has one-sided operations when it can read every
 * member. */
dpc_status_t dpc_ucx_set_cma(dpc_ucx_t *ux, int nprocs, const int64_t *pids);
/* Small messages (up to max_msg <= DPC_SHM_MAX_MSG bytes of host memory,
 * the same on every process, and no more than the node's rings carry,
 * dpc_shm_max_msg) to and from the processes of this node through
 * shared-memory mailboxes from now on (each of them having attached to
 * all the others' segments): takes shm over. slots[i] is process i's
 * index among shm's processes, -1 for a process on another node (whose
 * messages go by UCX); every index once. NULL: every process is on this
 * node, process i at index i. Context id 2^DPC_UCX_CTX_BITS - 1 is then
 * reserved for doorbells. */
struct dpc_shm;
dpc_status_t dpc_ucx_set_shm(dpc_ucx_t *ux, struct dpc_shm *shm, const int *slots,
                             size_t max_msg);
bool dpc_ucx_has_shm(const dpc_ucx_t *ux);
/* Flushes and closes endpoints (bounded wait), destroys worker and context. */
void dpc_ucx_destroy(dpc_ucx_t *ux);

/* A transport over a group: group rank i is process world[i]. */
dpc_status_t dpc_ucx_group_create(dpc_ucx_t *ux, int rank, int size, const int *world,
                                  dpc_transport_t **tp_p);
void dpc_ucx_group_destroy(dpc_transport_t *tp);

/* For a thread that sleeps while others may drive the worker: arms the
 * wakeup and returns the fd to poll() (without holding the caller's lock),
 * or DPC_UCX_ARM_BUSY when events are pending (progress now), or
 * DPC_UCX_ARM_NONE when the transports have no wakeup (sleep briefly). */
#define DPC_UCX_ARM_BUSY (-1)
#define DPC_UCX_ARM_NONE (-2)
int dpc_ucx_arm(dpc_ucx_t *ux);
/* Whether what keeps the arm busy is work for the next progress (ends to
 * report, large messages to read), rather than only a mailbox record no
 * receive wants yet or UCX's own events. */
bool dpc_ucx_work_pending(const dpc_ucx_t *ux);

/* "UCX 1.13.1; memory types: host, ..." for dpcoll_info and logs. */
void dpc_ucx_describe(dpc_ucx_t *ux, char *buf, size_t len);

#endif
