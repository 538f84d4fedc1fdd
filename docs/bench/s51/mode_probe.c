/*
 * Which of its two states this VM is in (session 51): 2 ranks exchange
 * 1 MiB each way through shared memory in 64 KiB records, a ring of 8 per
 * direction, each copied in by one rank and out by the other (what the
 * mailboxes do), then read 1 MiB of each other's memory by
 * process_vm_readv in 256 KiB calls (what the direct algorithms and the
 * rendezvous do), medians of 21. Prints "PROBE mbox M cma C us/MiB ratio
 * cma/mbox R": R near 1 or above, the mailboxes are fast (the ring
 * algorithms win); near 0.4, they are slow (the direct ones and recursive
 * halving win); modes.sh runs it beside dpcoll_bench. NT=1: the records
 * written with streaming stores, as DPCOLL_SHM_STREAM=1 has the mailboxes
 * write them (stream_probe.txt). "pingpong": a cache line handed between
 * the two ranks, one-way ns (pingpong.txt).
 *
 *   mpicc -O2 -o /tmp/mode_probe docs/bench/s51/mode_probe.c -lrt
 *   mpiexec -n 2 /tmp/mode_probe [record_bytes [pad]]
 *
 * (not built by make: a measurement behind a note)
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
#include <sys/uio.h>
#include <emmintrin.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
#define NSLOT 8
#define TOTAL (1u<<20)
static void nt_copy(char *d, const char *s, size_t n)
{
  for (size_t i = 0; i < n; i += 16)
    _mm_stream_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));
  _mm_sfence();
}
static int use_nt;
int main(int argc,char**argv){
  MPI_Init(&argc,&argv); int r; MPI_Comm_rank(MPI_COMM_WORLD,&r);
  use_nt = getenv("NT") && atoi(getenv("NT")); size_t SLOT = argc>1?strtoul(argv[1],0,0):65536; size_t pad = argc>2?strtoul(argv[2],0,0):0;
  size_t ringsz = 4096 + NSLOT*(SLOT+pad);
  if(!r){int fd=shm_open("/dpc_mode_probe",O_CREAT|O_RDWR,0600); ftruncate(fd,2*ringsz); close(fd);}
  MPI_Barrier(MPI_COMM_WORLD);
  int fd=shm_open("/dpc_mode_probe",O_RDWR,0600); char*shm=mmap(0,2*ringsz,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0); close(fd);
  MPI_Barrier(MPI_COMM_WORLD); if(!r) shm_unlink("/dpc_mode_probe");
  char *mine=shm+r*ringsz, *theirs=shm+(1-r)*ringsz;   /* ring I consume / ring I produce into */
  volatile uint64_t *myhead=(uint64_t*)mine, *mytail=(uint64_t*)(mine+64), *thead=(uint64_t*)theirs, *ttail=(uint64_t*)(theirs+64);
  char *a=aligned_alloc(4096,TOTAL), *b=aligned_alloc(4096,TOTAL); memset(a,r+1,TOTAL); memset(b,0,TOTAL);
  enum{REPS=21}; double tm[REPS];
  size_t nseg=TOTAL/SLOT;
  for(int k=-3;k<REPS;k++){
    *myhead=0; *mytail=0; MPI_Barrier(MPI_COMM_WORLD);
    double t0=now();
    uint64_t s=0, rc=0;
    while(rc<nseg){
      if(s<nseg && s-__atomic_load_n(ttail,__ATOMIC_ACQUIRE)<NSLOT){ if(use_nt) nt_copy(theirs+4096+(s%NSLOT)*(SLOT+pad), a+s*SLOT, SLOT); else memcpy(theirs+4096+(s%NSLOT)*(SLOT+pad), a+s*SLOT, SLOT); __atomic_store_n(thead,s+1,__ATOMIC_RELEASE); s++; }
      if(__atomic_load_n(myhead,__ATOMIC_ACQUIRE)>rc){ memcpy(b+rc*SLOT, mine+4096+(rc%NSLOT)*(SLOT+pad), SLOT); __atomic_store_n(mytail,rc+1,__ATOMIC_RELEASE); rc++; }
    }
    double t1=now(); MPI_Barrier(MPI_COMM_WORLD);
    if(k>=0) tm[k]=t1-t0;
  }
  long long me[2]={getpid(),(long long)(uintptr_t)a},peer[2];
  MPI_Sendrecv(me,2,MPI_LONG_LONG,1-r,0,peer,2,MPI_LONG_LONG,1-r,0,MPI_COMM_WORLD,MPI_STATUS_IGNORE);
  double tc[REPS];
  for(int k=-3;k<REPS;k++){
    MPI_Barrier(MPI_COMM_WORLD);
    double t0=now();
    for(size_t o=0;o<TOTAL;o+=262144){struct iovec l={b+o,262144}, rm={(void*)(uintptr_t)(peer[1]+o),262144}; process_vm_readv(peer[0],&l,1,&rm,1,0);}
    double t1=now(); MPI_Barrier(MPI_COMM_WORLD);
    if(k>=0) tc[k]=t1-t0;
  }
  qsort(tc,REPS,8,cmpd);
  /* a cache line handed back and forth 2000 times: one-way latency, ns */
  volatile uint64_t *ball=(uint64_t*)(shm+128);
  double tpp[REPS];
  for(int k=-3;k<REPS;k++){
    *ball=0; MPI_Barrier(MPI_COMM_WORLD);
    double t0=now();
    for(uint64_t i=0;i<2000;i++){
      if((i&1)==(uint64_t)r){ while(__atomic_load_n(ball,__ATOMIC_ACQUIRE)!=i); __atomic_store_n(ball,i+1,__ATOMIC_RELEASE);} }
    if(r==0) while(__atomic_load_n(ball,__ATOMIC_ACQUIRE)!=2000);
    double t1=now(); MPI_Barrier(MPI_COMM_WORLD);
    if(k>=0) tpp[k]=(t1-t0)/2000*1e9;
  }
  qsort(tpp,REPS,8,cmpd);
  qsort(tm,REPS,8,cmpd);
  if(!r) printf("PROBE mbox %.1f cma %.1f us/MiB (medians) pingpong %.0f ns ratio cma/mbox %.2f\n", tm[REPS/2]*1e6, tc[REPS/2]*1e6, tpp[REPS/2], tc[REPS/2]/tm[REPS/2]);
  if(!r) printf("bidirectional 1 MiB each way, slots %zu+%zu: min %.1f us median %.1f us (%.1f GB/s each way)\n", SLOT, pad, tm[0]*1e6, tm[REPS/2]*1e6, TOTAL/tm[REPS/2]/1e9);
  MPI_Finalize();
}
