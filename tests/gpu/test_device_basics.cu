// The harness pieces that kernels share, checked on the device: the border mapping, the store
// rounding, BT.709 luma and image addressing give the same answers in device code as on the
// host; DeviceImage uploads and downloads every shape exactly; CUDA errors become klab::Error.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "harness/border.hpp"
#include "harness/cuda_check.hpp"
#include "harness/device_image.hpp"
#include "harness/numeric.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab {
namespace {

// Owns a device array for the duration of a test.
template <class T>
class DeviceArray {
public:
    explicit DeviceArray(std::size_t count) : count_(count) {
        KLAB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)));
    }
    ~DeviceArray() { KLAB_CUDA_CHECK_NOTHROW(cudaFree(data_)); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    T* get() { return data_; }
    std::vector<T> to_host() const {
        std::vector<T> host(count_);
        KLAB_CUDA_CHECK(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
        return host;
    }
    void from_host(const std::vector<T>& host) {
        KLAB_CUDA_CHECK(cudaMemcpy(data_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice));
    }

private:
    T* data_ = nullptr;
    std::size_t count_;
};

constexpr int kMinI = -40, kMaxI = 40, kMaxN = 9, kModeCount = 5;

__global__ void border_index_kernel(int* out) {
    const int mode = blockIdx.x, n = blockIdx.y + 1, i = static_cast<int>(threadIdx.x) + kMinI;
    out[(mode * kMaxN + n - 1) * (kMaxI - kMinI + 1) + (i - kMinI)] = border_index(i, n, static_cast<BorderMode>(mode));
}

__global__ void saturate_kernel(const float* in, std::uint8_t* out, int count) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < count) out[k] = saturate_round_u8(in[k]);
}

__global__ void gray_kernel(std::uint8_t* out) {  // one block per (r, g), one thread per b
    out[(blockIdx.y * 256 + blockIdx.x) * 256 + threadIdx.x] =
        gray_bt709(static_cast<std::uint8_t>(blockIdx.y), static_cast<std::uint8_t>(blockIdx.x),
                   static_cast<std::uint8_t>(threadIdx.x));
}

// Reads an image through ImageView::at and writes it tightly packed in (y, x, c) order.
__global__ void pack_kernel(ImageView<const std::uint8_t> image, std::uint8_t* out) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x >= image.shape.width) return;
    for (int c = 0; c < image.shape.channels; ++c)
        out[(static_cast<std::size_t>(y) * image.shape.width + x) * image.shape.channels + c] = image.at(x, y, c);
}

using DeviceBasics = test::GpuTest;

TEST_F(DeviceBasics, BorderIndexMatchesTheHost) {
    const int span = kMaxI - kMinI + 1;
    DeviceArray<int> device(static_cast<std::size_t>(kModeCount * kMaxN * span));
    border_index_kernel<<<dim3(kModeCount, kMaxN), span>>>(device.get());
    KLAB_CUDA_CHECK_LAUNCH(nullptr);
    const std::vector<int> got = device.to_host();
    for (int mode = 0; mode < kModeCount; ++mode)
        for (int n = 1; n <= kMaxN; ++n)
            for (int i = kMinI; i <= kMaxI; ++i)
                ASSERT_EQ(got[static_cast<std::size_t>((mode * kMaxN + n - 1) * span + (i - kMinI))],
                          border_index(i, n, static_cast<BorderMode>(mode)))
                    << "mode " << mode << " n " << n << " i " << i;
}

TEST_F(DeviceBasics, StoreRoundingMatchesTheHostIncludingTies) {
    std::vector<float> values = {-1e30f, -0.5f, -0.0f, 0.49999997f, 0.5f, 1.5f, 2.5f, 254.5f, 255.49998f, 255.5f, 1e30f,
                                 std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()};
    for (int k = -20; k <= 540; ++k) values.push_back(static_cast<float>(k) * 0.5f);  // every tie and integer
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> any(-10.0f, 270.0f);
    for (int k = 0; k < 100000; ++k) values.push_back(any(rng));
    const int count = static_cast<int>(values.size());
    DeviceArray<float> in(values.size());
    DeviceArray<std::uint8_t> out(values.size());
    in.from_host(values);
    saturate_kernel<<<(count + 255) / 256, 256>>>(in.get(), out.get(), count);
    KLAB_CUDA_CHECK_LAUNCH(nullptr);
    const std::vector<std::uint8_t> got = out.to_host();
    for (int k = 0; k < count; ++k) ASSERT_EQ(got[k], saturate_round_u8(values[k])) << "value " << values[k];
    EXPECT_EQ(got[4], 0);    // 0.5 -> 0
    EXPECT_EQ(got[5], 2);    // 1.5 -> 2
    EXPECT_EQ(got[6], 2);    // 2.5 -> 2
    EXPECT_EQ(got[7], 254);  // 254.5 -> 254
    EXPECT_EQ(got[9], 255);  // 255.5 saturates
}

TEST_F(DeviceBasics, Bt709LumaMatchesTheHostForEveryColour) {
    DeviceArray<std::uint8_t> out(std::size_t{1} << 24);
    gray_kernel<<<dim3(256, 256), 256>>>(out.get());
    KLAB_CUDA_CHECK_LAUNCH(nullptr);
    const std::vector<std::uint8_t> got = out.to_host();
    for (int r = 0; r < 256; ++r)
        for (int g = 0; g < 256; ++g)
            for (int b = 0; b < 256; ++b)
                ASSERT_EQ(got[(static_cast<std::size_t>(r) * 256 + g) * 256 + b],
                          gray_bt709(static_cast<std::uint8_t>(r), static_cast<std::uint8_t>(g), static_cast<std::uint8_t>(b)));
}

TEST_F(DeviceBasics, DeviceImageRoundTripsEveryShapeAndAddressesLikeTheHost) {
    std::mt19937 rng(17);
    const ImageShape shapes[] = {{1, 1, 1, Layout::aos}, {1, 7, 3, Layout::soa}, {7, 1, 4, Layout::aos},
                                 {33, 31, 3, Layout::soa}, {127, 65, 4, Layout::aos}, {640, 480, 1, Layout::aos}};
    for (const ImageShape& shape : shapes) {
        const std::size_t row_bytes = static_cast<std::size_t>(shape.row_elements());
        ImageU8 host(shape, row_bytes + 13);  // a host pitch larger than the row
        for (int y = 0; y < shape.height; ++y)
            for (int x = 0; x < shape.width; ++x)
                for (int c = 0; c < shape.channels; ++c) host.at(x, y, c) = static_cast<std::uint8_t>(rng());
        const DeviceImage<std::uint8_t> device(host);
        EXPECT_GE(device.pitch_bytes(), row_bytes);
        EXPECT_TRUE(same_pixels(device.download(), host)) << to_string(shape);

        DeviceArray<std::uint8_t> packed(shape.pixels() * shape.channels);
        pack_kernel<<<dim3((shape.width + 127) / 128, shape.height), 128>>>(device.view(), packed.get());
        KLAB_CUDA_CHECK_LAUNCH(nullptr);
        const std::vector<std::uint8_t> got = packed.to_host();
        for (int y = 0; y < shape.height; ++y)
            for (int x = 0; x < shape.width; ++x)
                for (int c = 0; c < shape.channels; ++c)
                    ASSERT_EQ(got[(static_cast<std::size_t>(y) * shape.width + x) * shape.channels + c], host.at(x, y, c));
    }
}

TEST_F(DeviceBasics, DeviceImageMovesAndRefusesMismatchedShapes) {
    DeviceImage<std::uint32_t> a(ImageShape{9, 4, 1, Layout::aos});
    const std::size_t pitch = a.pitch_bytes();
    DeviceImage<std::uint32_t> b(std::move(a));
    EXPECT_EQ(b.pitch_bytes(), pitch);
    EXPECT_EQ(a.view().data, nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    HostImage<std::uint32_t> wrong(9, 4, 3);
    try {
        b.upload(wrong);
        ADD_FAILURE() << "expected klab::Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("upload between a 9x4x3 aos host image and a 9x4x1 aos device image"),
                  std::string::npos)
            << e.what();
    }
}

// Provokes a CUDA error on purpose, so it is kept out of the sanitizer runs (its suite name is
// excluded by KLAB_SANITIZE_FILTER's default): memcheck reports every failed API call.
using DeviceErrorPaths = test::GpuTest;

TEST_F(DeviceErrorPaths, CudaCheckThrowsWithCallFileAndErrorName) {
    void* p = nullptr;
    try {
        KLAB_CUDA_CHECK(cudaMalloc(&p, std::size_t{1} << 62));
        ADD_FAILURE() << "expected klab::Error";
    } catch (const Error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("cudaErrorMemoryAllocation"), std::string::npos) << message;
        EXPECT_NE(message.find("cudaMalloc(&p, std::size_t{1} << 62)"), std::string::npos) << message;
        EXPECT_NE(message.find("test_device_basics.cu"), std::string::npos) << message;
    }
    (void)cudaGetLastError();  // this error was expected; leave none for the hygiene listener
}

TEST_F(DeviceBasics, DeviceQueryDescribesTheGpu) {
    const DeviceQuery query = query_devices();
    ASSERT_FALSE(query.devices.empty());
    const DeviceInfo& d = query.devices.front();
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.cc_major, 5);
    EXPECT_GT(d.sm_count, 0);
    EXPECT_GT(d.global_memory_bytes, std::size_t{1} << 30);
    EXPECT_GT(d.runtime_version, 0);
}

}  // namespace
}  // namespace klab
