/*
 * Cross-memory attach: reading another process's memory on this node with
 * process_vm_readv, one kernel copy from the owner's buffer into the
 * reader's. It is the path UCX's "cma" transport takes for tag rendezvous,
 * but UCX 1.13 does not offer it to ucp_get on user memory: its RMA lanes on
 * one node are sysv/posix, which reach only memory they allocated, so a get
 * on a user buffer is emulated with active messages served by the owner's
 * progress (measured: slower than sending). The one-sided algorithms
 * therefore read with it directly, and only where every process of a node
 * has shown it can read every other of its node (dpc_cma_probe).
 */
#ifndef DPC_CMA_H
#define DPC_CMA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "dpc_status.h"

/* What a process publishes for the probe. */
typedef struct dpc_cma_card {
    int64_t pid;
    uint64_t host;          /* hash of the boot id: equal = same kernel */
    uint64_t probe_addr;    /* a word holding probe_value */
    uint64_t probe_value;
} dpc_cma_card_t;

/* This process's card (lets peers read it: PR_SET_PTRACER where Yama asks). */
void dpc_cma_card(dpc_cma_card_t *card);
/* 1 when this process can read the probe word of each other process whose
 * card is on its host (cards of other hosts are passed over); 0 otherwise. */
int dpc_cma_probe(const dpc_cma_card_t *cards, int n, int me);
/* Read len bytes at remote address `addr` of process pid into dst. */
dpc_status_t dpc_cma_read(pid_t pid, uint64_t addr, void *dst, size_t len);
/* Write len bytes from src at remote address `addr` of process pid. */
dpc_status_t dpc_cma_write(pid_t pid, uint64_t addr, const void *src, size_t len);

#endif
