// Bad input to a variant is a clear klab::Error from the harness before any launch: the output
// buffer still holds its sentinel afterwards and no CUDA error is left behind (the listener).
// Also the one large-shared-memory path: a tile above 48 KiB opts in and still verifies.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "harness/cuda_check.hpp"
#include "harness/device_image.hpp"
#include "harness/reference/reference.hpp"
#include "harness/variant.hpp"
#include "harness/verify.hpp"
#include "tests/common/test_util.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab {
namespace {

constexpr std::uint8_t kSentinel = 0x5A;

// A valid 40x30x3 problem with its device buffers; each test breaks one thing.
class VariantErrors : public test::GpuTest {
protected:
    void SetUp() override {
        test::GpuTest::SetUp();
        if (IsSkipped()) return;
        problem = convolve_problem(ImageShape{40, 30, 3, Layout::aos}, masks::gaussian(5), Border{});
        in = DeviceImage<std::uint8_t>(problem.shape);
        in.upload(test::random_image(problem.shape, 5));
        out = DeviceImage<std::uint8_t>(problem.shape);
        KLAB_CUDA_CHECK(cudaMemset(out.view().data, kSentinel, out.capacity_bytes()));
        mask = std::make_unique<DeviceMask>(*problem.mask);
        buffers = DeviceBuffers{device_buffer(in), device_buffer(out), mask->view()};
    }

    // Expects run() to throw klab::Error containing `fragment`, and the output to be untouched.
    void expect_refused(const DeviceBuffers& b, const LaunchShape& shape, const std::string& fragment,
                        const std::string& variant_name = "conv.global") {
        const Variant& variant = Registry::instance().get(variant_name);
        try {
            run(variant, problem, b, shape);
            ADD_FAILURE() << "expected klab::Error containing \"" << fragment << "\"";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        }
        KLAB_CUDA_CHECK(cudaDeviceSynchronize());
        std::vector<std::uint8_t> raw(out.capacity_bytes());
        KLAB_CUDA_CHECK(cudaMemcpy(raw.data(), out.view().data, raw.size(), cudaMemcpyDeviceToHost));
        std::size_t changed = 0;
        for (std::uint8_t byte : raw) changed += byte != kSentinel;
        EXPECT_EQ(changed, 0u) << "a kernel ran although the call was refused";
    }

    Problem problem;
    DeviceImage<std::uint8_t> in;
    DeviceImage<std::uint8_t> out;
    std::unique_ptr<DeviceMask> mask;
    DeviceBuffers buffers;
};

TEST_F(VariantErrors, TheValidCallRuns) {
    run(Registry::instance().get("conv.global"), problem, buffers, LaunchShape{32, 8, {}});
    const ImageU8 input = test::random_image(problem.shape, 5);  // what SetUp uploaded
    const ImageU8 expected = reference::convolve(input, *problem.mask, problem.border);
    EXPECT_TRUE(verify_convolution(input, *problem.mask, problem.border, expected, out.download()).ok());
}

TEST_F(VariantErrors, BlockOverTheThreadLimit) {
    // The seeds' 64x64-thread launch, which CUDA silently refuses to run.
    expect_refused(buffers, LaunchShape{64, 64, {}}, "block 64x64 has 4096 threads; allowed: block sides of at least 1 and at most 1024 threads per block");
    expect_refused(buffers, LaunchShape{0, 8, {}}, "allowed: block sides of at least 1");
}

TEST_F(VariantErrors, GridOverTheDeviceLimit) {
    // 65535 blocks at most in y: a 1-pixel-wide, 131072-row image with 1-row blocks needs 131072.
    problem.shape = ImageShape{1, 131072, 1, Layout::aos};
    DeviceImage<std::uint8_t> tall_in(problem.shape);
    KLAB_CUDA_CHECK(cudaMemset(tall_in.view().data, 0, tall_in.capacity_bytes()));
    out = DeviceImage<std::uint8_t>(problem.shape);
    KLAB_CUDA_CHECK(cudaMemset(out.view().data, kSentinel, out.capacity_bytes()));
    expect_refused(DeviceBuffers{device_buffer(tall_in), device_buffer(out), mask->view()}, LaunchShape{32, 1, {}},
                   "grid 1x131072x1 is out of range; allowed: grid sides from 1 to");
}

TEST_F(VariantErrors, NullBuffersAndMask) {
    DeviceBuffers b = buffers;
    b.input.data = nullptr;
    expect_refused(b, LaunchShape{}, "the input buffer is null; allowed: device memory for a 40x30x3 aos u8 image");
    b = buffers;
    b.output.data = nullptr;
    expect_refused(b, LaunchShape{}, "the output buffer is null");
    b = buffers;
    b.mask.data = nullptr;
    expect_refused(b, LaunchShape{}, "the device mask is null; allowed: the 5x5 mask in device memory");
}

TEST_F(VariantErrors, BufferTooSmallForTheImage) {
    // The image spans (rows - 1) pitches and one row: one byte less is too small.
    const std::size_t span = 29 * out.pitch_bytes() + 120;
    DeviceBuffers b = buffers;
    b.output.capacity_bytes = span - 1;
    expect_refused(b, LaunchShape{}, fmt::format("the output buffer holds {} bytes, less than 30 rows of pitch {} span",
                                                 span - 1, out.pitch_bytes()));
    b.output.capacity_bytes = span;
    run(Registry::instance().get("conv.global"), problem, b, LaunchShape{});  // exactly enough
    KLAB_CUDA_CHECK(cudaMemset(out.view().data, kSentinel, out.capacity_bytes()));
    b = buffers;
    b.input.capacity_bytes = 100;
    expect_refused(b, LaunchShape{}, "the input buffer holds 100 bytes, less than 30 rows");
    b = buffers;
    b.input.pitch_bytes = ~std::size_t{0} / 16;  // (rows - 1) * pitch would wrap around
    expect_refused(b, LaunchShape{}, "the input buffer holds");
}

TEST_F(VariantErrors, PitchSmallerThanARow) {
    DeviceBuffers b = buffers;
    b.input.pitch_bytes = 119;  // a row of 40 RGB pixels is 120 bytes
    expect_refused(b, LaunchShape{}, "the input buffer's pitch is 119 bytes; allowed: at least the 120 bytes of a row");
}

TEST_F(VariantErrors, HostMemoryIsNotADeviceBuffer) {
    std::vector<std::uint8_t> host(in.capacity_bytes());
    DeviceBuffers b = buffers;
    b.input.data = host.data();
    expect_refused(b, LaunchShape{}, "the input buffer is not device memory");
}

TEST_F(VariantErrors, BuffersOfTheWrongShapeTypeOrPlace) {
    DeviceBuffers b = buffers;
    b.output.shape.layout = Layout::soa;
    expect_refused(b, LaunchShape{}, "the output buffer is a 40x30x3 soa image");
    b = buffers;
    b.output.type = ElementType::u32;
    expect_refused(b, LaunchShape{}, "the output buffer holds u32 elements");
    b = buffers;
    b.output = b.input;
    expect_refused(b, LaunchShape{}, "the input and output buffers overlap");
    b = buffers;
    b.mask.width = 3;
    expect_refused(b, LaunchShape{}, "the device mask is 3x5, the problem's 5x5");
    b = buffers;
    b.mask.data = problem.mask->coefficients().data();  // host memory
    expect_refused(b, LaunchShape{}, "conv.global: the mask is not device memory");
}

TEST_F(VariantErrors, InvalidProblems) {
    problem.shape = ImageShape{40, 30, 2, Layout::aos};
    expect_refused(buffers, LaunchShape{}, "image has 2 channels");
    problem.shape = ImageShape{40, 30, 5, Layout::aos};
    expect_refused(buffers, LaunchShape{}, "image has 5 channels");
    problem.shape = ImageShape{0, 30, 3, Layout::aos};
    expect_refused(buffers, LaunchShape{}, "image size 0x30");
    problem.shape = ImageShape{40, 30, 3, Layout::aos};
    problem.mask.reset();
    expect_refused(buffers, LaunchShape{}, "a convolve problem without a mask");
}

TEST_F(VariantErrors, ShapesTheVariantRefuses) {
    expect_refused(buffers, LaunchShape{4, 32, {}}, "conv.halo_tiled: block 4x32", "conv.halo_tiled");
    expect_refused(buffers, LaunchShape{32, 8, {{"outputs_per_thread", 2}}},
                   "gives 1 parameters; allowed: exactly the declared parameters: none");
}

TEST_F(VariantErrors, TileAbove48KiBOptsInAndVerifies) {
    // 1024x1 threads, a 31x31 mask and 4 channels: a (1024+30) x 31 x 4 = 130696-byte tile.
    problem = convolve_problem(ImageShape{2500, 40, 4, Layout::aos}, masks::box(31), Border{BorderMode::reflect, 0});
    const ImageU8 input = test::random_image(problem.shape, 9);
    DeviceImage<std::uint8_t> big_in(input);
    DeviceImage<std::uint8_t> big_out(problem.shape);
    const DeviceMask big_mask(*problem.mask);
    const DeviceBuffers b{device_buffer(big_in), device_buffer(big_out), big_mask.view()};
    const LaunchPlan plan = prepare(Registry::instance().get("conv.tiled_2batch"), problem, b, LaunchShape{1024, 1, {}});
    ASSERT_EQ(plan.kernels.size(), 1u);
    EXPECT_EQ(plan.kernels[0].dynamic_shared_bytes, 130696u);
    launch(plan);
    const Verification v = verify_convolution(input, *problem.mask, problem.border,
                                              reference::convolve(input, *problem.mask, problem.border, 0),
                                              big_out.download());
    EXPECT_TRUE(v.ok()) << v.summary();
}

// A test double with conv.global's kernels that launches nothing; each test below overrides the
// one hook it checks.
class ConvGlobalDouble : public Variant {
public:
    explicit ConvGlobalDouble(std::string name) : name_(std::move(name)) {}
    std::string name() const override { return name_; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override { return "test double"; }
    Support supports(const Problem&) const override { return Support::yes(); }
    TuningSpace tuning_space() const override { return block_tuning_space(); }
    std::vector<KernelLaunch> kernels(const Problem& p, const LaunchShape& s) const override {
        return Registry::instance().get("conv.global").kernels(p, s);
    }
    void enqueue(const LaunchPlan&, cudaStream_t) const override {}

private:
    std::string name_;
};

// conv.global's kernels with a scratch request: prepare() allocates it into the plan, or refuses
// the call when the device cannot hold it (before any launch, the output untouched).
class ScratchVariant final : public ConvGlobalDouble {
public:
    explicit ScratchVariant(std::size_t bytes) : ConvGlobalDouble("test.scratch"), bytes_(bytes) {}
    std::size_t scratch_bytes(const Problem&, const LaunchShape&) const override { return bytes_; }

private:
    std::size_t bytes_;
};

TEST_F(VariantErrors, ScratchIsAllocatedIntoThePlan) {
    const LaunchPlan plan = prepare(ScratchVariant(1000), problem, buffers, LaunchShape{32, 8, {}});
    ASSERT_NE(plan.scratch, nullptr);
    EXPECT_EQ(plan.scratch_bytes, 1000u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(plan.scratch.get()) % 256, 0u);
    cudaPointerAttributes attributes{};
    KLAB_CUDA_CHECK(cudaPointerGetAttributes(&attributes, plan.scratch.get()));
    EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
    const LaunchPlan copy = plan;  // copies share the plan's scratch
    EXPECT_EQ(copy.scratch_as<std::uint8_t>(), plan.scratch_as<std::uint8_t>());
    EXPECT_EQ(prepare(ScratchVariant(0), problem, buffers, LaunchShape{32, 8, {}}).scratch, nullptr);
}

// configure_kernels(): prepare() calls it once per plan, after its own checks of the call, and
// launch() never does (a variant sets its kernels' attributes there, not per launch).
class ConfiguringVariant final : public ConvGlobalDouble {
public:
    ConfiguringVariant() : ConvGlobalDouble("test.configuring") {}
    void configure_kernels(const Problem&) const override { ++calls; }

    mutable int calls = 0;
};

TEST_F(VariantErrors, ConfigureKernelsRunsOncePerPlanAndNeverPerLaunch) {
    const ConfiguringVariant variant;
    const LaunchPlan plan = prepare(variant, problem, buffers, LaunchShape{32, 8, {}});
    EXPECT_EQ(variant.calls, 1);
    launch(plan);
    launch(plan);
    EXPECT_EQ(variant.calls, 1);
    EXPECT_THROW(prepare(variant, problem, buffers, LaunchShape{0, 8, {}}), Error);  // refused before it configures
    EXPECT_EQ(variant.calls, 1);
}

// integral.tile_gather's gray kernels take the largest shared-memory carveout when a gray plan is
// prepared (its configure_kernels); a colour AoS plan leaves its kernels at the driver's choice.
TEST_F(VariantErrors, IntegralTileGatherPreparesTheGrayCarveout) {
    const Variant& variant = Registry::instance().get("integral.tile_gather");
    for (const int channels : {3, 1}) {
        Problem p;
        p.op = Operation::integral;
        p.shape = ImageShape{300, 200, channels, Layout::aos};
        DeviceImage<std::uint8_t> image(p.shape);
        DeviceImage<std::uint32_t> table(p.shape);
        const LaunchPlan plan = prepare(variant, p, DeviceBuffers{device_buffer(image), device_buffer(table), {}}, variant.default_shape(p));
        ASSERT_EQ(plan.kernels.size(), 2u);
        for (const KernelLaunch& k : plan.kernels) {
            cudaFuncAttributes attributes{};
            KLAB_CUDA_CHECK(cudaFuncGetAttributes(&attributes, k.kernel));
            if (channels == 1) {
                EXPECT_EQ(attributes.preferredShmemCarveout, cudaSharedmemCarveoutMaxShared) << k.kernel_name;
            } else {
                EXPECT_NE(attributes.preferredShmemCarveout, cudaSharedmemCarveoutMaxShared) << k.kernel_name;
            }
        }
    }
}

// A failed allocation on purpose: in the suite DeviceErrorPaths (the same fixture as in the other
// files), which the sanitizer runs leave out (memcheck reports every failed API call).
using DeviceErrorPaths = test::GpuTest;

TEST_F(DeviceErrorPaths, ScratchBeyondTheDevicesMemoryIsRefusedUpFront) {
    const Problem problem = convolve_problem(ImageShape{40, 30, 3, Layout::aos}, masks::gaussian(5), Border{});
    DeviceImage<std::uint8_t> in(problem.shape);
    DeviceImage<std::uint8_t> out(problem.shape);
    const DeviceMask mask(*problem.mask);
    const DeviceBuffers buffers{device_buffer(in), device_buffer(out), mask.view()};
    std::size_t free_bytes = 0, total_bytes = 0;
    KLAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    try {
        prepare(ScratchVariant(2 * total_bytes), problem, buffers, LaunchShape{32, 8, {}});
        ADD_FAILURE() << "a scratch request beyond the device's memory was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("bytes of scratch device memory"), std::string::npos) << e.what();
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // the failed allocation left no error behind
}

}  // namespace
}  // namespace klab

