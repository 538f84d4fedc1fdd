/* Cross-memory attach (see dpc_cma.h). */
#define _GNU_SOURCE
#include "config.h"
#include "dpc_cma.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

static volatile uint64_t probe_word;

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* The boot id names this kernel instance: two processes with the same one
 * share an address-space namespace of pids (within one pid namespace,
 * which mpiexec's children on a node share). */
static uint64_t host_id(void)
{
    char buf[128] = {0};
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    size_t n = 0;
    if (f) {
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
    }
    if (n == 0)
        n = (size_t)gethostname(buf, sizeof(buf) - 1) == 0 ? strlen(buf) : 0;
    return fnv(buf, n);
}

void dpc_cma_card(dpc_cma_card_t *card)
{
#ifdef PR_SET_PTRACER
    /* Yama's ptrace_scope 1 lets only ancestors read us unless we say so;
     * elsewhere this fails harmlessly */
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
    probe_word = ((uint64_t)getpid() << 20) ^ 0x5eedc0ffee123ull;
    card->pid = getpid();
    card->host = host_id();
    card->probe_addr = (uint64_t)(uintptr_t)&probe_word;
    card->probe_value = probe_word;
}

int dpc_cma_probe(const dpc_cma_card_t *cards, int n, int me)
{
    for (int i = 0; i < n; i++) {
        if (i == me || cards[i].host != cards[me].host)
            continue;
        uint64_t v = 0;
        if (dpc_cma_read((pid_t)cards[i].pid, cards[i].probe_addr, &v, sizeof(v)) != DPC_OK ||
            v != cards[i].probe_value)
            return 0;
    }
    return 1;
}

/* Bytes one system call moves at most. A copy of tens of megabytes in one
 * call stays in the kernel for milliseconds, and the calls' returns are
 * where the scheduler hands the core to a thread that has woken up (the
 * program's, back from a sleep or a GPU wait). Measured (2 ranks, a 64 MiB
 * MPI_Iallreduce behind an 18-23 ms sleep, Rabenseifner's 32 MiB messages
 * read by the progress thread): 79-85% hidden in 512 KiB calls, 71-81%
 * in whole-message ones; within the VM's noise, and the pieces cost
 * nothing measurable, so they stay. UCX's cma transport moves 512 KiB at
 * a time too. */
#define CMA_CALL_MAX (512u << 10)

/* One call may move less than asked (a fault part way): go on from there. */
static dpc_status_t cma_move(pid_t pid, uint64_t addr, char *d, size_t len, int write)
{
    while (len > 0) {
        size_t n = len < CMA_CALL_MAX ? len : CMA_CALL_MAX;
        struct iovec local = {.iov_base = d, .iov_len = n};
        struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = n};
        ssize_t got = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0)
                            : process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return errno == ESRCH ? DPC_ERR_PEER_LOST : DPC_ERR_TRANSPORT;
        }
        if (got == 0)
            return DPC_ERR_TRANSPORT;
        d += got;
        addr += (uint64_t)got;
        len -= (size_t)got;
    }
    return DPC_OK;
}

dpc_status_t dpc_cma_read(pid_t pid, uint64_t addr, void *dst, size_t len)
{
    return cma_move(pid, addr, dst, len, 0);
}

dpc_status_t dpc_cma_write(pid_t pid, uint64_t addr, const void *src, size_t len)
{
    return cma_move(pid, addr, (char *)src, len, 1);
}
