/* How long does a program's MPI call wait while the progress thread works
 * on a large nonblocking collective? Post it, then "compute" (spin on the
 * clock) for T = 2 x its measured time, calling MPI_Test every 20 us of
 * compute (what a training loop that polls for progress does); record the
 * longest MPI_Test call, and the time to start and finish an 8-byte
 * MPI_Iallreduce on a second communicator halfway through. Medians of 21
 * repeats, slowest rank. Usage: held BYTES COLL (0 allreduce, 1 bcast,
 * 2 allgather, 3 alltoall). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
#define R 21
int main(int argc,char**argv){
  MPI_Init(&argc,&argv);
  int r,p; MPI_Comm_rank(MPI_COMM_WORLD,&r); MPI_Comm_size(MPI_COMM_WORLD,&p);
  size_t b = argc>1 ? strtoul(argv[1],0,0) : 16<<20; int c = argc>2 ? atoi(argv[2]) : 1;
  int n=b/4; float *in=malloc(b*p),*out=malloc(b*p); memset(in,1,b*p); memset(out,0,b*p);
  MPI_Comm side; MPI_Comm_dup(MPI_COMM_WORLD,&side);
  MPI_Request q;
#define POST() (c==0?MPI_Iallreduce(in,out,n,MPI_FLOAT,MPI_SUM,MPI_COMM_WORLD,&q):\
                c==1?MPI_Ibcast(in,n,MPI_FLOAT,0,MPI_COMM_WORLD,&q):\
                c==2?MPI_Iallgather(in,n,MPI_FLOAT,out,n,MPI_FLOAT,MPI_COMM_WORLD,&q):\
                     MPI_Ialltoall(in,n/p,MPI_FLOAT,out,n/p,MPI_FLOAT,MPI_COMM_WORLD,&q))
  double v[R], mx[R], sm[R];
  for(int i=-3;i<R;i++){MPI_Barrier(MPI_COMM_WORLD);double t0=now();POST();MPI_Wait(&q,MPI_STATUS_IGNORE);if(i>=0)v[i]=now()-t0;}
  qsort(v,R,sizeof(double),cmp); double tc=v[R/2];
  MPI_Allreduce(MPI_IN_PLACE,&tc,1,MPI_DOUBLE,MPI_MAX,MPI_COMM_WORLD);
  for(int i=-2;i<R;i++){
    MPI_Barrier(MPI_COMM_WORLD); double ts=now(), worst=0, small=0; int f=0, sent=0;
    POST();
    double next=ts+20e-6, end=ts+2*tc;
    while(now()<end){
      if(!sent && now()>ts+tc/2){float x=1,y; MPI_Request s; double t0=now();
        MPI_Iallreduce(&x,&y,1,MPI_FLOAT,MPI_SUM,side,&s); MPI_Wait(&s,MPI_STATUS_IGNORE); small=now()-t0; sent=1;}
      if(now()>=next){double t0=now(); if(!f) MPI_Test(&q,&f,MPI_STATUS_IGNORE); double d=now()-t0; if(d>worst) worst=d; next=now()+20e-6;}
    }
    if(!sent){float x=1,y; MPI_Request s; double t0=now();   /* (a start that took all of 2 t_comm) */
      MPI_Iallreduce(&x,&y,1,MPI_FLOAT,MPI_SUM,side,&s); MPI_Wait(&s,MPI_STATUS_IGNORE); small=now()-t0;}
    if(!f) MPI_Wait(&q,MPI_STATUS_IGNORE);
    if(i>=0){mx[i]=worst; sm[i]=small;}
  }
  qsort(mx,R,sizeof(double),cmp); qsort(sm,R,sizeof(double),cmp);
  double a[2]={mx[R/2],sm[R/2]}, g[2];
  MPI_Reduce(a,g,2,MPI_DOUBLE,MPI_MAX,0,MPI_COMM_WORLD);
  if(!r) printf("coll %d %zu B: t_comm %.0f us; longest MPI_Test %.1f us; 8 B side allreduce %.1f us (medians, slowest rank)\n",c,b,tc*1e6,g[0]*1e6,g[1]*1e6);
  MPI_Comm_free(&side); free(in); free(out); MPI_Finalize(); return 0;
}
