// Tiled matrix multiplication through shared memory, coalesced (app matMul_gpu_sharedmem,
// "MMSC"; seed 003 Fig. 4, optimisation #4). Each block stages TILE x TILE tiles of M and
// N in shared memory with consecutive lanes reading consecutive words.
#ifndef TILE
#define TILE 16
#endif

extern "C" __global__ void matMul_gpu_sharedmem(float* Pd, const float* Md, const float* Nd, int N) {
  __shared__ float Ms[TILE][TILE];
  __shared__ float Ns[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  float p = 0.0f;
  for (int m = 0; m < (N + TILE - 1) / TILE; ++m) {
    const int kc = m * TILE + tx;
    const int kr = m * TILE + ty;
    Ms[ty][tx] = (row < N && kc < N) ? Md[(size_t)row * N + kc] : 0.0f;
    Ns[ty][tx] = (kr < N && col < N) ? Nd[(size_t)kr * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) p += Ms[ty][k] * Ns[k][tx];
    __syncthreads();
  }
  if (row < N && col < N) Pd[(size_t)row * N + col] = p;
}
