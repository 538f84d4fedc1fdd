#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc,char**argv){MPI_Init(&argc,&argv);int r;MPI_Comm_rank(MPI_COMM_WORLD,&r);
size_t n=atoi(argv[1]); int nb=atoi(argv[2]); int reps=atoi(argv[3]);
char*in=malloc(n/2),*out=malloc(n);memset(in,1,n/2);memset(out,0,n);
double best=1e9, tot=0; double *ts=malloc(sizeof(double)*reps);
for(int i=0;i<reps;i++){ memset(in,i,n/2); MPI_Barrier(MPI_COMM_WORLD); double t=MPI_Wtime();
 if(nb){MPI_Request q; MPI_Iallgather(in,n/2,MPI_BYTE,out,n/2,MPI_BYTE,MPI_COMM_WORLD,&q); MPI_Wait(&q,MPI_STATUS_IGNORE);}
 else MPI_Allgather(in,n/2,MPI_BYTE,out,n/2,MPI_BYTE,MPI_COMM_WORLD);
 t=MPI_Wtime()-t; double tm; MPI_Allreduce(&t,&tm,1,MPI_DOUBLE,MPI_MAX,MPI_COMM_WORLD); t=tm; ts[i]=t; tot+=t; if(t<best)best=t; volatile long s=0; for(size_t k=0;k<n;k+=64)s+=out[k];}
int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;} qsort(ts,reps,sizeof(double),cmp); if(!r)printf("n=%zu nb=%d median %.1f us min %.1f us\n",n,nb,ts[reps/2]*1e6,best*1e6);
MPI_Finalize();}
