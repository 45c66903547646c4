// Vector addition C = A + B (app vectorAdd, "vAdd"): one element per thread,
// ceil(N/TPB) blocks of TPB threads.
extern "C" __global__ void vectorAdd(const float* A, const float* B, float* C, int numElements) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < numElements) C[i] = A[i] + B[i];
}
