/* Two processes, each: write its 256 KiB input, then (order 0) copy it into
 * its own output and write it into the peer's output by process_vm_writev,
 * or (order 1) the write first, then the copy; then read its whole output.
 * Medians of the slower process's time per round. No MPI, no libdpcoll. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
typedef struct { volatile int arrive[2]; volatile int gen; pid_t pid[2]; char *out[2]; double t[2][4000]; } shared_t;
static void barrier(shared_t *sh, int me, int *gen){ int g=*gen; __atomic_add_fetch(&sh->arrive[g&1],1,__ATOMIC_SEQ_CST);
  if(me==0){ while(sh->arrive[g&1]<2) ; sh->arrive[g&1]=0; __atomic_store_n(&sh->gen,g+1,__ATOMIC_SEQ_CST);} else while(sh->gen==g) ; (*gen)++; }
int main(int argc,char**argv){
  size_t blk=argc>1?strtoul(argv[1],0,0):262144; int order=argc>2?atoi(argv[2]):0; int reps=argc>3?atoi(argv[3]):1000;
  shared_t *sh=mmap(0,sizeof(shared_t),PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  int me = fork()==0 ? 1 : 0;
  cpu_set_t cs; CPU_ZERO(&cs); CPU_SET(me,&cs); sched_setaffinity(0,sizeof cs,&cs);
  char *in=malloc(blk), *out=malloc(2*blk); memset(in,1,blk); memset(out,0,2*blk);
  sh->pid[me]=getpid(); sh->out[me]=out; int gen=0; barrier(sh,me,&gen);
  int peer=1-me; volatile long sink=0;
  for(int i=0;i<reps;i++){
    memset(in,i,blk); barrier(sh,me,&gen); double t0=now();
    struct iovec l={in,blk}, r={sh->out[peer]+me*blk,blk};
    int o = order==2 ? me : order;
    if(o==0){ memcpy(out+me*blk,in,blk); process_vm_writev(sh->pid[peer],&l,1,&r,1,0);} 
    else { process_vm_writev(sh->pid[peer],&l,1,&r,1,0); memcpy(out+me*blk,in,blk);} 
    sh->t[me][i]=now()-t0; barrier(sh,me,&gen);
    for(size_t k=0;k<2*blk;k+=64) sink+=out[k];
  }
  barrier(sh,me,&gen);
  if(me==1) return 0;
  wait(NULL);
  double *m=malloc(sizeof(double)*reps); for(int i=0;i<reps;i++) m[i]=sh->t[0][i]>sh->t[1][i]?sh->t[0][i]:sh->t[1][i];
  qsort(m,reps,8,cmp); printf("blk %zu order %s: median %.1f us, min %.1f\n",blk,order==2?"mixed (p0 copy first, p1 write first)":order?"write-then-copy":"copy-then-write",m[reps/2],m[0]);
  return 0; }
