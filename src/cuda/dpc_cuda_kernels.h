/* The device reduction kernels (dpc_cuda_reduce.cu), callable from C. */
#ifndef DPC_CUDA_KERNELS_H
#define DPC_CUDA_KERNELS_H

#include <stddef.h>

#define DPC_CUDA_UNSUPPORTED (-1)

#ifdef __cplusplus
extern "C" {
#endif
/* Enqueues dst[i] = a[i] op b[i] (n elements of dpc_dtype_t dt, dpc_op_t op)
 * on the CUDA stream; 0, a cudaError_t, or DPC_CUDA_UNSUPPORTED. */
int dpc_cuda_reduce_launch(void *dst, const void *a, const void *b, size_t n, int dt, int op,
                           void *stream);
#ifdef __cplusplus
}
#endif

#endif
