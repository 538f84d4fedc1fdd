/*
 * The few CUDA runtime calls tests/gpu/bench_gpu.c makes, over the fake
 * device (fake_device_plugin.c), so that the benchmark's checks run on any
 * machine: every collective on "device" buffers compared bit for bit with
 * staged MPICH, the very first call going device to device. Its times mean
 * nothing (the fake device copies with the CPU).
 */
#include <stddef.h>
#include <stdlib.h>

void *fake_dev_alloc(size_t n);
void fake_dev_copy(void *dst, const void *src, size_t n);

int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);
int cudaMallocHost(void **p, size_t n);
int cudaFreeHost(void *p);
int cudaMemcpy(void *d, const void *s, size_t n, int kind);
int cudaGetDeviceCount(int *n);
int cudaSetDevice(int d);
int cudaDeviceSynchronize(void);

int cudaMalloc(void **p, size_t n) { *p = fake_dev_alloc(n ? n : 1); return 0; }
int cudaFree(void *p) { (void)p; return 0; }   /* (the fake arena is never reused) */
int cudaMallocHost(void **p, size_t n) { *p = malloc(n ? n : 1); return *p ? 0 : 2; }
int cudaFreeHost(void *p) { free(p); return 0; }
int cudaMemcpy(void *d, const void *s, size_t n, int kind) { (void)kind; fake_dev_copy(d, s, n); return 0; }
int cudaGetDeviceCount(int *n) { *n = 1; return 0; }
int cudaSetDevice(int d) { (void)d; return 0; }
int cudaDeviceSynchronize(void) { return 0; }
