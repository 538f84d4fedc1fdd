/* docs/bench/s47: a training step's shape. Per step: 4 buckets, each
 * MPI_Iallreduce'd after a "backward" slice (a sleep, as while a GPU
 * computes), MPI_Waitall at the end; with argv[2]=1 also an MPI_Iallreduce
 * + MPI_Wait at once per step, of one float (a loss average) or argv[4]
 * bytes (session 48: a sync call of more than 64 KiB, such as DDP's
 * broadcast of buffers or a grad-norm allreduce, which the progress
 * thread's at-once streak counts). Median step time, slowest rank.
 * Usage: ddp_step BUCKET_BYTES LOSS SLICE_US [SYNC_BYTES] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
static void nap(double s){struct timespec t={(time_t)s,(long)((s-(time_t)s)*1e9)};nanosleep(&t,NULL);}
int main(int argc,char**argv){
  MPI_Init(&argc,&argv);
  int r; MPI_Comm_rank(MPI_COMM_WORLD,&r);
  size_t b = argc>1 ? strtoul(argv[1],0,0) : 4<<20; int n=b/4;
  int loss = argc>2 ? atoi(argv[2]) : 0;
  double slice = argc>3 ? atof(argv[3])*1e-6 : 300e-6;
  enum { NB = 4, STEPS = 60 };
  float *in[NB],*out[NB]; for(int i=0;i<NB;i++){in[i]=calloc(n,4);out[i]=calloc(n,4);}
  double st[STEPS]; size_t ln = argc>4 ? strtoul(argv[4],0,0)/4 : 1; float *lb=calloc(ln,4),*lbo=calloc(ln,4);
  for(int s=-5;s<STEPS;s++){
    MPI_Barrier(MPI_COMM_WORLD); double t0=now(); MPI_Request q[NB];
    for(int i=0;i<NB;i++){ nap(slice); MPI_Iallreduce(in[i],out[i],n,MPI_FLOAT,MPI_SUM,MPI_COMM_WORLD,&q[i]); }
    MPI_Waitall(NB,q,MPI_STATUSES_IGNORE);
    if(loss){MPI_Request ql; MPI_Iallreduce(lb,lbo,ln,MPI_FLOAT,MPI_SUM,MPI_COMM_WORLD,&ql); MPI_Wait(&ql,MPI_STATUS_IGNORE);}
    if(s>=0) st[s]=now()-t0;
  }
  qsort(st,STEPS,sizeof(double),cmp); double m=st[STEPS/2],mm;
  MPI_Reduce(&m,&mm,1,MPI_DOUBLE,MPI_MAX,0,MPI_COMM_WORLD);
  if(!r) printf("buckets %zu B, slice %.0f us, loss call %s (%zu B): step %.3f ms (the sleeps alone %.3f ms)\n",b,slice*1e6,loss?"yes":"no ",ln*4,mm*1e3,NB*slice*1e3);
  MPI_Finalize(); return 0;
}
