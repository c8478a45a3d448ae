// Per-block timestamps of one launch: when each block of a kernel (or of a variant's kernels)
// reaches each of its phases, which Nsight Compute's per-kernel averages cannot show. For a copy of a
// variant run by scripts/gpu-experiment.sh, or for a probe; never for a variant that is committed.
//
// Use, in the copy:
//   #include "probes/block_timeline.hpp"
//   timeline::begin_launch(on);      first thing in the launch's first kernel, all threads
//   timeline::mark(k, on);           at phase boundary k (0 ... kMarks - 1), all threads of the block:
//                                    thread 0 stores %globaltimer after a __syncthreads(), so the
//                                    mark is when the whole block has got there
//   timeline::finish("tag", n, on);  last statement of the launch's last kernel: every thread of
//                                    every block must reach it (no early return), or the count of
//                                    finished blocks is wrong for every later launch
//   timeline::now()                  the GPU's nanosecond clock (%globaltimer), e.g. to wait a set time
// `on` must be the same for every block of a launch (e.g. "the 8K image at block 32x8"). A
// variant's kernels that give the same block index to the same tile may each place marks. The
// kPrintedLaunch-th launch of the process with `on` set prints, from its last block to finish, one
// line per block:  TL <tag> <block> <SM> <n> <mark 0> ... <mark 7>  (nanoseconds; marks from n on
// are 0; <SM>: where the block made its last mark, i.e. in the last kernel); scripts/timeline.py
// summarises them. Only blocks below kMaxBlocks are recorded. Every block must make all n marks in
// every marked launch: a mark it skips prints as 0 or as an earlier launch's time.
// Cost: a barrier and a store per mark, a fence and an atomic per block at the end, and a few
// registers: the copy of integral.tile_gather with six marks ran 99.6 us against 94.2 for the file
// (8K gray u64, H200; probes/README.md has what it showed). Tested by tests/gpu/test_block_timeline.cu.
#pragma once

#include <cstdio>

namespace klab::timeline {

constexpr unsigned kMaxBlocks = 4096;  // 4096 lines of ~200 bytes fit the default 1 MB printf buffer
constexpr int kMarks = 8;
constexpr unsigned kPrintedLaunch = 3;  // the earlier ones warm up the caches and the clocks

struct Book {
    unsigned long long at[kMaxBlocks][kMarks];
    unsigned sm[kMaxBlocks];
    unsigned launches;  // launches begun with `on` set, in this process
    unsigned finished;  // blocks of the current launch's last kernel that have finished
};
// One book per translation unit: the copy's kernels share it, other files never see it.
static __device__ Book book;

__device__ __forceinline__ unsigned block_index() { return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z); }
__device__ __forceinline__ bool first_thread() { return threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0; }

__device__ __forceinline__ void begin_launch(bool on) {
    if (on && block_index() == 0 && first_thread()) atomicAdd(&book.launches, 1u);
}

// The GPU's nanosecond clock (%globaltimer).
__device__ __forceinline__ unsigned long long now() {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

__device__ __forceinline__ void mark(int k, bool on) {
    if (!on) return;
    __syncthreads();
    const unsigned block = block_index();
    if (!first_thread() || block >= kMaxBlocks || k < 0 || k >= kMarks) return;
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    book.at[block][k] = now();
    book.sm[block] = sm;
}

// The book's lines, by the launch's last block. Not inlined, so that printf's registers and stack
// stay out of the marked kernel's own code.
static __device__ __noinline__ void print_book(const char* tag, int marks, unsigned blocks) {
    const volatile Book& seen = book;
    for (unsigned b = 0; b < blocks && b < kMaxBlocks; ++b) {
        unsigned long long m[kMarks];
        for (int k = 0; k < kMarks; ++k) m[k] = k < marks ? seen.at[b][k] : 0ull;
        printf("TL %s %u %u %d %llu %llu %llu %llu %llu %llu %llu %llu\n", tag, b, seen.sm[b], marks, m[0], m[1], m[2], m[3], m[4], m[5],
               m[6], m[7]);
    }
}

__device__ __forceinline__ void finish(const char* tag, int marks, bool on) {
    if (!on) return;
    __syncthreads();
    if (!first_thread()) return;
    const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
    __threadfence();  // this block's marks before its count
    if (atomicAdd(&book.finished, 1u) != blocks - 1) return;
    book.finished = 0;  // every block of the launch has counted: ready for the next one
    __threadfence();    // the other blocks' marks after their counts
    if (*static_cast<volatile unsigned*>(&book.launches) == kPrintedLaunch) print_book(tag, marks, blocks);
}

}  // namespace klab::timeline
