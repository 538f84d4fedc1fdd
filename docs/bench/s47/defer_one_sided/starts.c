/* docs/bench/s47: how long a nonblocking start takes (the program's time before it can
 * compute), median of repeats, slowest rank; the wait after it. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
int main(int argc,char**argv){
  MPI_Init(&argc,&argv);
  int r,p; MPI_Comm_rank(MPI_COMM_WORLD,&r); MPI_Comm_size(MPI_COMM_WORLD,&p);
  size_t maxb = 16u<<20;
  char *in=malloc(maxb*p), *out=malloc(maxb*p);
  memset(in,1,maxb*p); memset(out,0,maxb*p);
  const char *names[]={"allreduce","bcast","reduce_scatter_block","allgather","alltoall"};
  int N=40;
  for(int c=0;c<5;c++) for(size_t b=64<<10;b<=maxb;b*=4){
    double st[64],wt[64];
    int n=(int)(b/4);
    for(int i=-3;i<N;i++){
      MPI_Request q; MPI_Barrier(MPI_COMM_WORLD);
      double t0=now();
      switch(c){
      case 0: MPI_Iallreduce(in,out,n,MPI_FLOAT,MPI_SUM,MPI_COMM_WORLD,&q);break;
      case 1: MPI_Ibcast(in,n,MPI_FLOAT,0,MPI_COMM_WORLD,&q);break;
      case 2: MPI_Ireduce_scatter_block(in,out,n/p,MPI_FLOAT,MPI_SUM,MPI_COMM_WORLD,&q);break;
      case 3: MPI_Iallgather(in,n/p,MPI_FLOAT,out,n/p,MPI_FLOAT,MPI_COMM_WORLD,&q);break;
      case 4: MPI_Ialltoall(in,n/p,MPI_FLOAT,out,n/p,MPI_FLOAT,MPI_COMM_WORLD,&q);break;
      }
      double t1=now();
      MPI_Wait(&q,MPI_STATUS_IGNORE);
      double t2=now();
      if(i>=0){st[i]=t1-t0;wt[i]=t2-t0;}
    }
    qsort(st,N,sizeof(double),cmp); qsort(wt,N,sizeof(double),cmp);
    double s=st[N/2], w=wt[N/2], sm, wm;
    MPI_Reduce(&s,&sm,1,MPI_DOUBLE,MPI_MAX,0,MPI_COMM_WORLD);
    MPI_Reduce(&w,&wm,1,MPI_DOUBLE,MPI_MAX,0,MPI_COMM_WORLD);
    if(!r) printf("%-22s %9zu start %8.1f us  start+wait %8.1f us  (%.0f%%)\n",names[c],b,sm*1e6,wm*1e6,100*sm/wm);
  }
  MPI_Finalize(); return 0;
}
