// The offline occupancy calculator against hand-computed values, and the GPU models' names.
#include <gtest/gtest.h>

#include <string>

#include "tests/common/test_util.hpp"
#include "tests/cpu/autotune_fixtures.hpp"

namespace klab::autotune {
namespace {

using namespace fixtures;

// ---------------------------------------------------------------------------------------------
// Offline occupancy (cuda_occupancy.h) on H100/H200 properties, against hand-computed values:
// an SM holds 2048 threads, 32 blocks, 64 K registers (allocated per warp in units of 256) and
// 228 KiB of shared memory (1 KiB reserved per block).

TEST(Occupancy, SixtyFourToTenTwentyFourThreadBlocksAtUpTo32RegistersReachFullOccupancy) {
    for (const char* name : {"H100", "H200"}) {
        for (int threads : {64, 128, 256, 512, 1024}) {
            for (int registers : {16, 24, 32}) {
                const Occupancy o = occupancy(model(name), resources(registers), threads, 0);
                EXPECT_EQ(o.fraction, 1.0) << name << " " << threads << " threads " << registers << " registers";
                EXPECT_EQ(o.blocks_per_sm, 2048 / threads);
                EXPECT_EQ(o.limited_by, "");
            }
        }
    }
}

TEST(Occupancy, ThirtyTwoThreadBlocksReachHalfBecauseAnSmHoldsThirtyTwoBlocks) {
    for (const char* name : {"H100", "H200"}) {
        const Occupancy o = occupancy(model(name), resources(32), 32, 0);
        EXPECT_EQ(o.blocks_per_sm, 32) << name;
        EXPECT_EQ(o.fraction, 0.5) << name;
        EXPECT_NE(o.limited_by.find("blocks"), std::string::npos) << o.limited_by;
    }
}

TEST(Occupancy, FortyRegistersCannotReachFullOccupancy) {
    // 40 registers x 32 threads = 1280 per warp; 65536 / 1280 = 51 warps -> whole blocks of 8
    // warps (256 threads): 6 blocks = 1536 threads = 75%.
    for (int threads : {64, 128, 256, 512, 1024}) {
        const Occupancy o = occupancy(model("H100"), resources(40), threads, 0);
        EXPECT_LT(o.fraction, 1.0) << threads;
        EXPECT_NE(o.limited_by.find("registers"), std::string::npos) << o.limited_by;
    }
    EXPECT_EQ(occupancy(model("H100"), resources(40), 256, 0).fraction, 0.75);
    EXPECT_EQ(occupancy(model("H100"), resources(40), 1024, 0).fraction, 0.5);  // one 1024-thread block fits
}

TEST(Occupancy, SharedMemoryLimitsBlocks) {
    // 64 KiB + 1 KiB reserved per block: three blocks fit in 228 KiB -> 3 x 256 = 768 threads.
    const Occupancy o = occupancy(model("H200"), resources(32), 256, 64 * 1024);
    EXPECT_EQ(o.blocks_per_sm, 3);
    EXPECT_EQ(o.fraction, 768.0 / 2048.0);
    EXPECT_NE(o.limited_by.find("shared memory"), std::string::npos);
}

TEST(Occupancy, AdaSmsHold1536ThreadsSoTenTwentyFourThreadBlocksReachTwoThirds) {
    for (const char* name : {"L4", "RTX 4090"}) {
        EXPECT_NEAR(occupancy(model(name), resources(32), 1024, 0).fraction, 1024.0 / 1536.0, 1e-12) << name;
        EXPECT_EQ(occupancy(model(name), resources(32), 512, 0).fraction, 1.0) << name;
    }
    EXPECT_EQ(occupancy(model("A100"), resources(32), 1024, 0).fraction, 1.0);
}

TEST(Occupancy, BlocksThatCannotRunAreErrorsNamingTheLimit) {
    test::expect_error([] { occupancy(model("H200"), resources(32), 2048, 0); }, "threads per block");
    test::expect_error([] { occupancy(model("H200"), resources(32), 256, 300 * 1024); }, "bytes of shared memory");
    test::expect_error([] { occupancy(model("H200"), resources(255), 1024, 0); }, "not one block fits");
    KernelResources limited = resources(32);
    limited.max_threads_per_block = 256;
    test::expect_error([&] { occupancy(model("H200"), limited, 512, 0); }, "1 to 256 threads");
}

TEST(Occupancy, PercentTextNeverRoundsUpToFull) {
    EXPECT_EQ(percent_text(1.0), "100%");
    EXPECT_EQ(percent_text(0.75), "75%");
    EXPECT_EQ(percent_text(0.9995), "99.9%");
    EXPECT_EQ(percent_text(2.0 / 3.0), "66.6%");
}

TEST(GpuModels, NamesAliasesAndSlugs) {
    EXPECT_EQ(model("H200").name, "NVIDIA H200");
    EXPECT_EQ(model("h100").cc_major, 9);
    EXPECT_EQ(model("a100").sm_count, 108);
    EXPECT_EQ(model("RTX 4090").max_threads_per_sm, 1536);
    EXPECT_EQ(model("NVIDIA L4").cc_minor, 9);
    EXPECT_FALSE(find_gpu_model("H1000"));
    EXPECT_FALSE(find_gpu_model("X100"));
    EXPECT_FALSE(find_gpu_model(""));
    EXPECT_EQ(gpu_slug("NVIDIA H200"), "nvidia-h200");
    EXPECT_EQ(gpu_slug("NVIDIA GeForce RTX 4090"), "nvidia-geforce-rtx-4090");
    EXPECT_EQ(gpu_slug("  NVIDIA  H100 80GB HBM3 "), "nvidia-h100-80gb-hbm3");
    test::expect_error([] { gpu_slug("--"); }, "GPU name");
}

}  // namespace
}  // namespace klab::autotune
