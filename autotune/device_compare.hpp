#pragma once
// Counts the bytes where two u8 device images differ, on the device: the tuner's fast check of
// each candidate's output against the reference (uploaded once). Only when this count is not 0
// does the tuner download the output and apply the full rule of harness/verify.hpp, which
// tolerates fp32 rounding ties.
#include <cstddef>

#include "harness/variant.hpp"

namespace klab::autotune {

// `a` and `b` must be u8 buffers of the same shape (pitches may differ). Synchronous.
std::size_t count_differences(const DeviceBuffer& a, const DeviceBuffer& b);

}  // namespace klab::autotune
