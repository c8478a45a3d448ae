// probes/sm_clock.hpp on the device: blocks that spin for a set count of cycles are counted only in
// the launches marked on, their cycles cover the spin, their nanoseconds fit in the launches' own
// time (CUDA events), their rate (cycles per ns) is a clock the GPU can keep, and block 0 of the
// 100th counted launch prints the totals in the format scripts/sm_clock.py reads.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "harness/cuda_check.hpp"
#include "harness/cuda_event.hpp"
#include "probes/sm_clock.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab {
namespace {

constexpr unsigned kBlocks = 12;
constexpr long long kSpinCycles = 20000;  // about 10 us at 2 GHz

__global__ void spin(bool on) {
    const sm_clock::Start start = sm_clock::start("test", on);
    const long long begin = clock64();
    while (clock64() - begin < kSpinCycles) {
    }
    sm_clock::stop(start, on);
}

// One launch; its time by CUDA events, in ns.
double launch(bool on) {
    const CudaEvent start, stop;
    KLAB_CUDA_CHECK(cudaEventRecord(start.get()));
    spin<<<kBlocks, 64>>>(on);
    KLAB_CUDA_CHECK(cudaGetLastError());
    KLAB_CUDA_CHECK(cudaEventRecord(stop.get()));
    KLAB_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0.0f;
    KLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    return ms * 1e6;
}

sm_clock::Totals read_totals() {
    sm_clock::Totals totals{};
    KLAB_CUDA_CHECK(cudaMemcpyFromSymbol(&totals, sm_clock::totals, sizeof(totals)));
    return totals;
}

class SmClock : public test::GpuTest {};

TEST_F(SmClock, CountsMarkedLaunchesAndPrintsEveryHundredth) {
    static const sm_clock::Totals fresh{};  // this process may have counted launches before (--gtest_repeat)
    KLAB_CUDA_CHECK(cudaMemcpyToSymbol(sm_clock::totals, &fresh, sizeof(fresh)));
    for (int i = 0; i < 20; ++i) launch(false);  // the clocks up from idle; not counted
    testing::internal::CaptureStdout();
    double counted_ns = 0;  // the counted launches' time by CUDA events
    for (unsigned i = 0; i < sm_clock::kPrintEvery - 1; ++i) {
        counted_ns += launch(true);
        launch(false);  // not counted
    }
    std::fflush(stdout);
    EXPECT_EQ(testing::internal::GetCapturedStdout(), "") << "nothing printed before the 100th counted launch";

    const sm_clock::Totals before = read_totals();
    const unsigned long long counted = static_cast<unsigned long long>(sm_clock::kPrintEvery - 1) * kBlocks;
    EXPECT_EQ(before.launches, sm_clock::kPrintEvery - 1);
    EXPECT_EQ(before.blocks, counted);
    EXPECT_GE(before.cycles, counted * kSpinCycles) << "each block's span covers its spin";
    EXPECT_LE(static_cast<double>(before.ns), 1.05 * counted_ns * kBlocks) << "each block's span lies within its launch's time";
    int device = 0, peak_khz = 0;
    KLAB_CUDA_CHECK(cudaGetDevice(&device));
    KLAB_CUDA_CHECK(cudaDeviceGetAttribute(&peak_khz, cudaDevAttrClockRate, device));
    const double ghz = static_cast<double>(before.cycles) / static_cast<double>(before.ns);
    const double peak_ghz = peak_khz / 1e6;
    EXPECT_GT(ghz, 0.1 * peak_ghz) << "cycles per ns: " << ghz << ", the device's peak " << peak_ghz << " GHz";
    EXPECT_LT(ghz, 1.05 * peak_ghz) << "cycles per ns: " << ghz << ", the device's peak " << peak_ghz << " GHz";

    testing::internal::CaptureStdout();
    launch(true);  // the 100th counted launch
    std::fflush(stdout);
    const std::string printed = testing::internal::GetCapturedStdout();
    std::istringstream fields(printed);
    std::string clk, tag;
    unsigned launches = 0;
    unsigned long long cycles = 0, ns = 0, blocks = 0;
    fields >> clk >> tag >> launches >> cycles >> ns >> blocks;
    ASSERT_TRUE(fields) << "not a CLK line: " << printed;
    EXPECT_EQ(clk, "CLK");
    EXPECT_EQ(tag, "test");
    EXPECT_EQ(launches, sm_clock::kPrintEvery - 1) << "the counted launches before the printing one";
    // The totals block 0 found: the launches before, and any block of this one that ended first.
    const sm_clock::Totals after = read_totals();
    EXPECT_GE(blocks, before.blocks);
    EXPECT_LT(blocks, before.blocks + kBlocks);
    EXPECT_GE(cycles, before.cycles);
    EXPECT_LE(cycles, after.cycles);
    EXPECT_GE(ns, before.ns);
    EXPECT_LE(ns, after.ns);
    EXPECT_EQ(after.launches, sm_clock::kPrintEvery);
    EXPECT_EQ(after.blocks, counted + kBlocks);
}

}  // namespace
}  // namespace klab
