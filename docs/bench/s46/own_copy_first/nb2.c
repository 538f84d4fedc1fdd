#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){MPI_Init(&argc,&argv);int r;MPI_Comm_rank(MPI_COMM_WORLD,&r);
size_t n=atoi(argv[1]); int reps=atoi(argv[2]); int touch=atoi(argv[3]);
char*in=malloc(n/2),*out=malloc(n);memset(in,1,n/2);memset(out,0,n);
double *ts=malloc(sizeof(double)*reps),*tw=malloc(sizeof(double)*reps),*tt=malloc(sizeof(double)*reps);
for(int i=0;i<reps;i++){ if(touch) memset(in,i,n/2); MPI_Barrier(MPI_COMM_WORLD); double t0=MPI_Wtime();
 MPI_Request q; MPI_Iallgather(in,n/2,MPI_BYTE,out,n/2,MPI_BYTE,MPI_COMM_WORLD,&q); double t1=MPI_Wtime(); MPI_Wait(&q,MPI_STATUS_IGNORE);
 double t2=MPI_Wtime(); ts[i]=t1-t0; tw[i]=t2-t1; tt[i]=t2-t0; volatile long s=0; if(touch) for(size_t k=0;k<n;k+=64)s+=out[k];}
qsort(ts,reps,8,cmp);qsort(tw,reps,8,cmp);qsort(tt,reps,8,cmp);
printf("rank %d n=%zu start %.1f wait %.1f total %.1f us (medians)\n",r,n,ts[reps/2]*1e6,tw[reps/2]*1e6,tt[reps/2]*1e6);
MPI_Finalize();}
