#pragma once
// Base fixture of the GPU suites: skips (visibly, as SKIPPED) where no CUDA device is found.
#include <gtest/gtest.h>

#include "harness/device_info.hpp"

namespace klab::test {

class GpuTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device found";
    }
};

}  // namespace klab::test
