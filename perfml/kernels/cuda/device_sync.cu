// Device synchronization / barrier density (seed 001 Table 2, "SM scheduler: Device
// synchronization"; seed 000 DEVICESYNC): CHAINS FFMA chains with a __syncthreads()
// after every SYNC_EVERY steps (SYNC_EVERY = ITERS: one barrier per loop trip).
#ifndef SYNC_EVERY
#define SYNC_EVERY 16
#endif
#ifndef ITERS
#define ITERS 256
#endif
#ifndef CHAINS
#define CHAINS 4
#endif
#ifndef REPS
#define REPS 64
#endif

extern "C" __global__ void device_sync(float* out, int zero) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  const float b = 1.0f + (float)zero;
  const float c = 0.5f * (float)zero;
  float x[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) x[k] = (float)(threadIdx.x + k);
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k)
        asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[k]) : "f"(b), "f"(c));
      if ((i + 1) % SYNC_EVERY == 0) __syncthreads();
    }
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) acc += x[k];
  if (acc == -1.0f) out[gid] = acc;  // never true: keeps the work alive
}
