// The SM clock a kernel really runs at: each block's cycles (clock64, its SM's cycle counter) over
// its nanoseconds (%globaltimer), summed over the launches of a process. nvidia-smi reports the
// clock the driver set, not the one the SMs keep under a given kernel: on the H200 it read 1980 MHz
// with no clock-event reason while klab-bench ran conv.separable_row_mma's row, and in another run
// of that row a copy counted with this header kept 1.795 cycles a nanosecond
// (kernels/notes/conv_separable_row_mma.md). For a copy of a variant run by
// scripts/gpu-experiment.sh, or for a probe; never for a variant that is committed.
//
// Use, in the copy's kernel:
//   #include "probes/sm_clock.hpp"
//   const sm_clock::Start clock_start = sm_clock::start("tag", on);   first thing, all threads
//   ...
//   sm_clock::stop(clock_start, on);                                    last thing, all threads
// Only thread (0, 0, 0) of a block counts: the span from its start() to its stop(). A block whose
// thread (0, 0, 0) returns before stop() is not counted (the rate of the others is unchanged).
// `on` picks the launches to count (e.g. "the 8K image"). The totals are one per translation unit
// and count every kernel launch of the file's kernels that passes `on`: the tag only labels the
// lines, so give a copy one tag (its suffix, say), and never two copies the same one. They assume
// the counted launches do not overlap (no programmatic dependent launch, no concurrent streams).
// Block 0 of every kPrintEvery-th counted launch prints the totals it finds, those of the launches
// before it (and of any of its own blocks that ended before it started: a few blocks more or less,
// which ran at the same clock), <launches> being how many counted launches came before it:
//   CLK <tag> <launches> <cycles> <nanoseconds> <blocks>
// The three sums are read one after the other, not at one instant (a block's cycles may be in and
// its nanoseconds not yet: about 1e-6 of a line's totals). scripts/sm_clock.py turns two such
// lines into the rate between them (GHz: cycles per ns).
// Cost: four clock reads and three atomics a block, one atomic a launch, and the print's call out of
// line. The counted copies of 2026-12-02 ran 7 to 10% slower than their files at the same shapes
// (8K RGB AoS: conv.separable_column_first 169.0 us against 158.1, conv.separable_row_mma 145.9
// against 133.3): their time is not the file's.
// Tested by tests/gpu/test_sm_clock.cu.
#pragma once

#include <cstdio>

namespace klab::sm_clock {

constexpr unsigned kPrintEvery = 100;

struct Totals {
    unsigned long long cycles;  // summed over the counted blocks
    unsigned long long ns;
    unsigned long long blocks;
    unsigned launches;  // counted launches begun, in this process
};
// One set of totals per translation unit: a copy's kernels share it, other files never see it.
static __device__ Totals totals;

struct Start {
    unsigned long long cycles;
    unsigned long long ns;
};

__device__ __forceinline__ bool first_thread() { return threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0; }

__device__ __forceinline__ unsigned long long now() {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

// Not inlined, so that printf's registers and stack stay out of the counted kernel's own code.
static __device__ __noinline__ void print_totals(const char* tag, unsigned launches) {
    const volatile Totals& seen = totals;
    printf("CLK %s %u %llu %llu %llu\n", tag, launches, seen.cycles, seen.ns, seen.blocks);
}

__device__ __forceinline__ Start start(const char* tag, bool on) {
    if (!on || !first_thread()) return Start{0, 0};
    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) {
        const unsigned launch = atomicAdd(&totals.launches, 1u) + 1;  // this one's number, from 1
        if (launch % kPrintEvery == 0) print_totals(tag, launch - 1);
    }
    Start s;
    s.ns = now();
    s.cycles = clock64();
    return s;
}

__device__ __forceinline__ void stop(Start s, bool on) {
    if (!on || !first_thread()) return;
    const unsigned long long cycles = clock64();
    const unsigned long long ns = now();
    atomicAdd(&totals.cycles, cycles - s.cycles);
    atomicAdd(&totals.ns, ns - s.ns);
    atomicAdd(&totals.blocks, 1ull);
}

}  // namespace klab::sm_clock
