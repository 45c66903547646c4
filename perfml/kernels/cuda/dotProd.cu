// Dot product (app dotProd, "dotP"): each thread accumulates a[i] * b[i] over a
// grid-stride loop, the block reduces in shared memory and writes one partial sum per
// block to c[blockIdx.x] (the host adds the partials). Works for any grid; the datasets
// record ceil(N/TPB) blocks (and a few 32-block runs).
#ifndef TPB
#define TPB 256
#endif

extern "C" __global__ void __launch_bounds__(TPB) dotProd(const float* a, const float* b, float* c, int n) {
  __shared__ float partial[TPB];
  float s = 0.0f;
  for (int i = blockIdx.x * TPB + threadIdx.x; i < n; i += gridDim.x * TPB) s += a[i] * b[i];
  partial[threadIdx.x] = s;
  __syncthreads();
#pragma unroll
  for (int w = TPB / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) c[blockIdx.x] = partial[0];
}
