// Sums and prefix sums across the 32 lanes of a warp by shuffles, for the integer types of the
// integral and box kernels (u32, u64). Every lane of the warp must call them (full mask).
//
// This header is device code: kernels/CMakeLists.txt puts it into the source hash of every kernel
// file that includes it (directly or through another kernels/ header).
#pragma once

namespace klab::warp {

constexpr unsigned kAllLanes = 0xffffffffu;

// The sum of `v` over lanes 0 ... lane (Hillis-Steele: five shuffles up).
template <class V>
__device__ __forceinline__ V inclusive_scan(V v, int lane) {
#pragma unroll
    for (int offset = 1; offset < 32; offset *= 2) {
        const V below = __shfl_up_sync(kAllLanes, v, offset);
        if (lane >= offset) v += below;
    }
    return v;
}

// The sum of `v` over the lanes below this one.
template <class V>
__device__ __forceinline__ V exclusive_scan(V v, int lane) {
    return inclusive_scan(v, lane) - v;
}

// The sum of `v` over the warp, in every lane (five shuffles across).
template <class V>
__device__ __forceinline__ V sum(V v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(kAllLanes, v, offset);
    return v;
}

}  // namespace klab::warp
