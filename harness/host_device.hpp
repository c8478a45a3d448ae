#pragma once
// KLAB_HD marks a function that the CPU reference and the CUDA kernels share. Under nvcc it
// compiles for both host and device; under the plain C++ compiler it is an ordinary inline.
#if defined(__CUDACC__)
#define KLAB_HD __host__ __device__ __forceinline__
#else
#define KLAB_HD inline
#endif
