// Maximum subsequence (subarray) sum, coarse-grained BSP/CGM style (app subSeqMax,
// "MSA"; seed 003 Section V-B and Fig. 5). The N integers are split into one contiguous
// interval per thread (N / (blocks * TPB) elements; 32 blocks x 128 threads in the
// datasets). A block stages CHUNK elements of each of its threads' intervals in shared
// memory with coalesced loads (a warp reads 32 consecutive words of one interval), then
// every thread scans its own row and reduces its interval to 5 integers:
//   vetFinal[5*t + 0] best subarray sum, +1 best prefix sum, +2 best suffix sum,
//   +3 total sum, +4 number of elements,
// which the host combines (the interval summaries of a CGM maximum-subarray algorithm).
// Requires N to be a multiple of blocks * TPB (all dataset sizes are powers of two >= 2^17).
#ifndef TPB
#define TPB 128
#endif
#define SSM_INT_MIN (-2147483647 - 1)  // no <climits> under NVRTC
#ifndef CHUNK
#define CHUNK 32
#endif

extern "C" __global__ void __launch_bounds__(TPB)
subSeqMax(const int* vet, int* vetFinal, int ElemPorThread, int N_Block) {
  __shared__ int tile[TPB][CHUNK + 1];  // +1: conflict-free row scans
  const int t = threadIdx.x;
  const int lane = t & 31, warp = t >> 5;
  const int* block_data = vet + (size_t)blockIdx.x * N_Block;
  int sum = 0, minpre = 0, pre = SSM_INT_MIN, cur = 0, best = SSM_INT_MIN;
  for (int j = 0; j < ElemPorThread; j += CHUNK) {
    // load: row r holds elements j .. j+CHUNK-1 of thread r's interval
    for (int r = warp; r < TPB; r += TPB / 32) {
      const int e = j + lane;
      if (lane < CHUNK) tile[r][lane] = (e < ElemPorThread) ? block_data[(size_t)r * ElemPorThread + e] : 0;
    }
    __syncthreads();
    const int n = min(CHUNK, ElemPorThread - j);
    for (int c = 0; c < n; ++c) {
      const int x = tile[t][c];
      minpre = min(minpre, sum);  // smallest prefix before this element
      sum += x;
      pre = max(pre, sum);
      cur = max(cur, 0) + x;      // Kadane
      best = max(best, cur);
    }
    __syncthreads();
  }
  int* o = vetFinal + 5 * ((size_t)blockIdx.x * TPB + t);
  o[0] = best;
  o[1] = pre;
  o[2] = sum - minpre;
  o[3] = sum;
  o[4] = ElemPorThread;
}
