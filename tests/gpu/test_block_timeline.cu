// probes/block_timeline.hpp on the device: a grid of 2-D blocks marks two phases per launch; the
// book counts the marked launches only, every block's marks are in order and name a real SM, the
// last block sets the finished count back to zero, and the third marked launch prints one line per
// block, in block order, in the format scripts/timeline.py reads.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "harness/cuda_check.hpp"
#include "probes/block_timeline.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab {
namespace {

constexpr unsigned kGridX = 8, kGridY = 5;  // 40 blocks

// x + kGridX * y of the block that timeline::block_index() numbered i (x must vary fastest: a row of
// tiles is a run of consecutive blocks for scripts/timeline.py --group).
__device__ unsigned numbered[kGridX * kGridY];

__global__ void two_phases(bool on) {
    if (timeline::first_thread()) numbered[timeline::block_index()] = blockIdx.x + kGridX * blockIdx.y;
    timeline::begin_launch(on);
    timeline::mark(0, on);
    const unsigned long long start = timeline::now();  // a phase of 2 us (__nanosleep's time is only approximate)
    while (timeline::now() < start + 2000) {
    }
    timeline::mark(1, on);
    timeline::finish("test", 2, on);
}

void launch(bool on) {
    two_phases<<<dim3(kGridX, kGridY), dim3(32, 2)>>>(on);
    KLAB_CUDA_CHECK(cudaGetLastError());
    KLAB_CUDA_CHECK(cudaDeviceSynchronize());
}

timeline::Book read_book() {
    timeline::Book book{};
    KLAB_CUDA_CHECK(cudaMemcpyFromSymbol(&book, timeline::book, sizeof(book)));
    return book;
}

class BlockTimeline : public test::GpuTest {};

TEST_F(BlockTimeline, MarksEveryBlockCountsMarkedLaunchesAndPrintsTheThird) {
    static const timeline::Book fresh{};  // this process may have marked launches before (--gtest_repeat)
    KLAB_CUDA_CHECK(cudaMemcpyToSymbol(timeline::book, &fresh, sizeof(fresh)));
    launch(true);
    launch(false);  // not counted
    launch(true);
    const timeline::Book book = read_book();
    EXPECT_EQ(book.launches, 2u);
    EXPECT_EQ(book.finished, 0u) << "the launch's last block sets the count back";
    int device = 0, sms = 0;
    KLAB_CUDA_CHECK(cudaGetDevice(&device));
    KLAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    for (unsigned b = 0; b < kGridX * kGridY; ++b) {
        EXPECT_GT(book.at[b][0], 0ull) << "block " << b;
        EXPECT_GE(book.at[b][1], book.at[b][0] + 1000) << "block " << b << ": its 2 us phase";
        EXPECT_LT(book.sm[b], static_cast<unsigned>(sms)) << "block " << b;
    }
    EXPECT_EQ(book.at[kGridX * kGridY][0], 0ull) << "no block beyond the grid";
    unsigned numbers[kGridX * kGridY] = {};
    KLAB_CUDA_CHECK(cudaMemcpyFromSymbol(numbers, numbered, sizeof(numbers)));
    for (unsigned i = 0; i < kGridX * kGridY; ++i) EXPECT_EQ(numbers[i], i) << "block_index() numbers blocks in x, then y";

    testing::internal::CaptureStdout();
    launch(true);  // the third marked launch
    std::fflush(stdout);
    const std::string printed = testing::internal::GetCapturedStdout();
    std::istringstream lines(printed);
    std::string line;
    unsigned expected_block = 0;
    while (std::getline(lines, line)) {
        std::istringstream fields(line);
        std::string tl, tag;
        unsigned block = 0, sm = 0;
        int marks = 0;
        unsigned long long m[timeline::kMarks] = {};
        fields >> tl >> tag >> block >> sm >> marks;
        for (auto& v : m) fields >> v;
        ASSERT_TRUE(fields) << "not a TL line: " << line;
        EXPECT_EQ(tl, "TL");
        EXPECT_EQ(tag, "test");
        EXPECT_EQ(block, expected_block++);
        EXPECT_EQ(marks, 2);
        EXPECT_LT(m[0], m[1]) << line;
        EXPECT_EQ(m[2], 0ull) << "marks from n on are 0: " << line;
    }
    EXPECT_EQ(expected_block, kGridX * kGridY) << "one line per block:\n" << printed;
    EXPECT_EQ(read_book().launches, 3u);
    testing::internal::CaptureStdout();
    launch(true);  // the fourth prints nothing
    std::fflush(stdout);
    EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
    EXPECT_EQ(read_book().launches, 4u);
}

}  // namespace
}  // namespace klab
