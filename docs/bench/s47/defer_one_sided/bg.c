/* When does a nonblocking allreduce finish in the background? post, sleep T,
 * one MPI_Test: the share of repeats done; and the wait's own time. */
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
  size_t b = argc>1 ? strtoul(argv[1],0,0) : 1<<20; int n=b/4; int c = argc>2 ? atoi(argv[2]) : 0; int p; MPI_Comm_size(MPI_COMM_WORLD,&p);
  float *in=malloc(b),*out=malloc(b);
#define POST() (c==0?MPI_Iallreduce(in,out,n,MPI_FLOAT,MPI_SUM,MPI_COMM_WORLD,&q):c==1?MPI_Ibcast(in,n,MPI_FLOAT,0,MPI_COMM_WORLD,&q):MPI_Ireduce_scatter_block(in,out,n/p,MPI_FLOAT,MPI_SUM,MPI_COMM_WORLD,&q))
  memset(in,0,b);
  MPI_Request q; double v[41];
  for(int i=-3;i<41;i++){MPI_Barrier(MPI_COMM_WORLD);double t0=now();POST();MPI_Wait(&q,MPI_STATUS_IGNORE);if(i>=0)v[i]=now()-t0;}
  qsort(v,41,sizeof(double),cmp); double tc=v[20];
  MPI_Bcast(&tc,1,MPI_DOUBLE,0,MPI_COMM_WORLD);
  if(!r) printf("coll %d %zu bytes: t_comm %.1f us\n",c,b,tc*1e6);
  double fs[]={1,1.5,2};
  for(int k=0;k<3;k++){
    int done=0; double w[41];
    for(int i=0;i<41;i++){MPI_Barrier(MPI_COMM_WORLD);double ts=now();POST();
      nap(fs[k]*tc); int f=0; MPI_Test(&q,&f,MPI_STATUS_IGNORE); done+=f; double t0=now(); if(!f) MPI_Wait(&q,MPI_STATUS_IGNORE); w[i]=now()-ts;}
    qsort(w,41,sizeof(double),cmp);
    int all; MPI_Reduce(&done,&all,1,MPI_INT,MPI_MIN,0,MPI_COMM_WORLD); double wm; MPI_Reduce(&w[20],&wm,1,MPI_DOUBLE,MPI_MAX,0,MPI_COMM_WORLD); w[20]=wm;
    if(!r) printf("  sleep %.1f x t_comm: done at the test in %2d/41 (worst rank); total median %.1f us, hidden %.0f%%\n",fs[k],all,w[20]*1e6,100*(tc+fs[k]*tc-w[20])/tc);
  }
  MPI_Finalize(); return 0;
}
