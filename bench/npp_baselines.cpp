#include "bench/npp_baselines.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "harness/cuda_check.hpp"
#include "harness/error.hpp"
#include "harness/mask.hpp"

#ifdef KLAB_HAVE_NPP
#include <npp.h>
#endif

namespace klab::bench {

#ifndef KLAB_HAVE_NPP

bool npp_built() { return false; }
std::string npp_version() { return "not built"; }
std::unique_ptr<NppBaseline> make_npp_baseline(const std::string& family, const Problem&, const DeviceBuffer&) {
    throw Error(fmt::format("{}: this build has no NPP (CMake did not find it in the CUDA toolkit)", family),
                "a build where CMake finds CUDA::nppif, CUDA::nppist and CUDA::nppc");
}

#else

namespace {

// Device memory owned by a baseline: NPP's outputs, intermediates and kernels.
class DeviceBytes {
public:
    DeviceBytes(std::size_t row_bytes, int rows) {
        KLAB_CUDA_CHECK(cudaMallocPitch(&data_, &pitch_, std::max<std::size_t>(row_bytes, 1), static_cast<std::size_t>(rows)));
    }
    ~DeviceBytes() { (void)cudaFree(data_); }
    DeviceBytes(const DeviceBytes&) = delete;
    DeviceBytes& operator=(const DeviceBytes&) = delete;
    template <class T>
    T* as() const { return static_cast<T*>(data_); }
    int pitch() const { return static_cast<int>(pitch_); }

private:
    void* data_ = nullptr;
    std::size_t pitch_ = 0;
};

std::unique_ptr<DeviceBytes> upload_floats(const std::vector<float>& values) {
    auto buffer = std::make_unique<DeviceBytes>(values.size() * sizeof(float), 1);
    KLAB_CUDA_CHECK(cudaMemcpy(buffer->as<float>(), values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice));
    return buffer;
}

void check(NppStatus status, const char* call) {
    // Negative statuses are errors, positive ones warnings (e.g. a ROI clipped to nothing): a
    // baseline that NPP warns about may not be doing the work it is compared on, so both fail the row.
    if (status != NPP_SUCCESS) {
        throw Error(fmt::format("{} returned NPP status {} ({})", call, static_cast<int>(status), status < 0 ? "an error" : "a warning"),
                    "NPP_SUCCESS (0)");
    }
}

// NPP 13's calls take a stream context that the caller fills (the plain calls are gone).
NppStreamContext stream_context(cudaStream_t stream) {
    static const NppStreamContext device = [] {
        NppStreamContext c{};
        KLAB_CUDA_CHECK(cudaGetDevice(&c.nCudaDeviceId));
        cudaDeviceProp p{};
        KLAB_CUDA_CHECK(cudaGetDeviceProperties(&p, c.nCudaDeviceId));
        c.nMultiProcessorCount = p.multiProcessorCount;
        c.nMaxThreadsPerMultiProcessor = p.maxThreadsPerMultiProcessor;
        c.nMaxThreadsPerBlock = p.maxThreadsPerBlock;
        c.nSharedMemPerBlock = p.sharedMemPerBlock;
        c.nCudaDevAttrComputeCapabilityMajor = p.major;
        c.nCudaDevAttrComputeCapabilityMinor = p.minor;
        return c;
    }();
    NppStreamContext c = device;
    c.hStream = stream;
    KLAB_CUDA_CHECK(cudaStreamGetFlags(stream, &c.nStreamFlags));
    return c;
}

NppiMaskSize gauss_mask_size(int k) {
    switch (k) {
        case 3: return NPP_MASK_SIZE_3_X_3;
        case 5: return NPP_MASK_SIZE_5_X_5;
        case 7: return NPP_MASK_SIZE_7_X_7;
        case 9: return NPP_MASK_SIZE_9_X_9;
        case 11: return NPP_MASK_SIZE_11_X_11;
        case 13: return NPP_MASK_SIZE_13_X_13;
        case 15: return NPP_MASK_SIZE_15_X_15;
        default: throw Error(fmt::format("NPP's Gaussian filter has no {}x{} mask", k, k), "3, 5, 7, 9, 11, 13 or 15");
    }
}

// What every baseline shares: the input, its size, and a u8 output of the input's shape.
class Base : public NppBaseline {
public:
    Base(const Problem& problem, const DeviceBuffer& input, int output_row_bytes, int output_rows)
        : problem_(problem),
          input_(static_cast<const Npp8u*>(input.data)),
          input_pitch_(static_cast<int>(input.pitch_bytes)),
          size_{problem.shape.width, problem.shape.height},
          output_(static_cast<std::size_t>(output_row_bytes), output_rows) {
        if (problem.shape.layout != Layout::aos) throw Error("NPP rows take interleaved (AoS) images", "an AoS problem");
        if (problem.op != Operation::integral && problem.border.mode != BorderMode::replicate) {
            throw Error(fmt::format("NPP row with a {} border", to_string(problem.border)), "replicate (NPP_BORDER_REPLICATE)");
        }
    }

protected:
    int channels() const { return problem_.shape.channels; }
    Traffic same_shape_u8() const { return minimum_traffic(problem_); }
    int mask_side() const { return problem_.mask->width(); }

    Problem problem_;
    const Npp8u* input_;
    int input_pitch_;
    NppiSize size_;
    NppiPoint origin_{0, 0};
    DeviceBytes output_;
};

int u8_row_bytes(const Problem& p) { return p.shape.width * p.shape.channels; }

void require_rgb(const Problem& p, const char* what) {
    if (p.shape.channels != 3) throw Error(fmt::format("{} with {} channels", what, p.shape.channels), "3 channels (the _C3R call)");
}

class Gauss : public Base {
public:
    Gauss(const Problem& p, const DeviceBuffer& in) : Base(p, in, u8_row_bytes(p), p.shape.height), mask_(gauss_mask_size(mask_side())) {
        if (p.shape.channels != 1 && p.shape.channels != 3) {
            throw Error(fmt::format("npp.gauss with {} channels", p.shape.channels), "1 or 3 channels");
        }
    }
    std::string call() const override {
        return channels() == 3 ? "nppiFilterGaussBorder_8u_C3R_Ctx" : "nppiFilterGaussBorder_8u_C1R_Ctx";
    }
    Traffic traffic() const override { return same_shape_u8(); }
    void enqueue(cudaStream_t stream) override {
        const NppStreamContext ctx = stream_context(stream);
        const auto f = channels() == 3 ? nppiFilterGaussBorder_8u_C3R_Ctx : nppiFilterGaussBorder_8u_C1R_Ctx;
        check(f(input_, input_pitch_, size_, origin_, output_.as<Npp8u>(), output_.pitch(), size_, mask_, NPP_BORDER_REPLICATE, ctx),
              "nppiFilterGaussBorder");
    }

private:
    NppiMaskSize mask_;
};

// NPP convolves (the kernel flipped); klab correlates: hand NPP the mask reversed.
std::vector<float> reversed(std::vector<float> values) {
    std::reverse(values.begin(), values.end());
    return values;
}

class Filter32f : public Base {
public:
    Filter32f(const Problem& p, const DeviceBuffer& in)
        : Base(p, in, u8_row_bytes(p), p.shape.height), kernel_(upload_floats(reversed(p.mask->coefficients()))) {
        require_rgb(p, "npp.filter32f");
    }
    std::string call() const override { return "nppiFilterBorder32f_8u_C3R_Ctx"; }
    Traffic traffic() const override { return same_shape_u8(); }
    void enqueue(cudaStream_t stream) override {
        const NppiSize kernel_size{problem_.mask->width(), problem_.mask->height()};
        const NppiPoint anchor{kernel_size.width / 2, kernel_size.height / 2};
        check(nppiFilterBorder32f_8u_C3R_Ctx(input_, input_pitch_, size_, origin_, output_.as<Npp8u>(), output_.pitch(), size_,
                                             kernel_->as<Npp32f>(), kernel_size, anchor, NPP_BORDER_REPLICATE,
                                             stream_context(stream)),
              "nppiFilterBorder32f_8u_C3R_Ctx");
    }

private:
    std::unique_ptr<DeviceBytes> kernel_;
};

// Row then column, NPP's u8 intermediate in between (it rounds after the row pass).
class Separable32f : public Base {
public:
    Separable32f(const Problem& p, const DeviceBuffer& in) : Base(p, in, u8_row_bytes(p), p.shape.height), intermediate_(u8_row_bytes(p), p.shape.height) {
        require_rgb(p, "npp.separable32f");
        const std::optional<SeparableFactors> factors = separate(*p.mask);
        if (!factors) throw Error(fmt::format("npp.separable32f on {}, not separable", p.mask->name()), "a rank-1 mask");
        row_ = upload_floats(reversed(factors->row));
        column_ = upload_floats(reversed(factors->column));
    }
    std::string call() const override { return "nppiFilterRowBorder32f_8u_C3R_Ctx + nppiFilterColumnBorder32f_8u_C3R_Ctx"; }
    Traffic traffic() const override { return same_shape_u8(); }
    void enqueue(cudaStream_t stream) override {
        const NppStreamContext ctx = stream_context(stream);
        const int k = mask_side();
        check(nppiFilterRowBorder32f_8u_C3R_Ctx(input_, input_pitch_, size_, origin_, intermediate_.as<Npp8u>(), intermediate_.pitch(),
                                                size_, row_->as<Npp32f>(), k, k / 2, NPP_BORDER_REPLICATE, ctx),
              "nppiFilterRowBorder32f_8u_C3R_Ctx");
        check(nppiFilterColumnBorder32f_8u_C3R_Ctx(intermediate_.as<Npp8u>(), intermediate_.pitch(), size_, origin_, output_.as<Npp8u>(),
                                                   output_.pitch(), size_, column_->as<Npp32f>(), k, k / 2, NPP_BORDER_REPLICATE, ctx),
              "nppiFilterColumnBorder32f_8u_C3R_Ctx");
    }

private:
    DeviceBytes intermediate_;
    std::unique_ptr<DeviceBytes> row_, column_;
};

class Box : public Base {
public:
    Box(const Problem& p, const DeviceBuffer& in) : Base(p, in, u8_row_bytes(p), p.shape.height) { require_rgb(p, "npp.box"); }
    std::string call() const override { return "nppiFilterBoxBorder_8u_C3R_Ctx"; }
    Traffic traffic() const override { return same_shape_u8(); }
    void enqueue(cudaStream_t stream) override {
        const NppiSize mask{problem_.mask->width(), problem_.mask->height()};
        check(nppiFilterBoxBorder_8u_C3R_Ctx(input_, input_pitch_, size_, origin_, output_.as<Npp8u>(), output_.pitch(), size_, mask,
                                             NppiPoint{mask.width / 2, mask.height / 2}, NPP_BORDER_REPLICATE, stream_context(stream)),
              "nppiFilterBoxBorder_8u_C3R_Ctx");
    }
};

// Two 16-bit gradients from a gray image (NPP has no magnitude call): the closest NPP pipeline.
class Sobel : public Base {
public:
    Sobel(const Problem& p, const DeviceBuffer& in)
        : Base(p, in, p.shape.width * 2, p.shape.height), vertical_(static_cast<std::size_t>(p.shape.width) * 2, p.shape.height) {
        if (p.shape.channels != 1) throw Error(fmt::format("npp.sobel with {} channels", p.shape.channels), "a gray image (_C1R)");
    }
    std::string call() const override {
        return "nppiFilterSobelHorizBorder_8u16s_C1R_Ctx + nppiFilterSobelVertBorder_8u16s_C1R_Ctx";
    }
    Traffic traffic() const override {
        const double pixels = static_cast<double>(problem_.shape.pixels());
        return {pixels, 4.0 * pixels};
    }
    void enqueue(cudaStream_t stream) override {
        const NppStreamContext ctx = stream_context(stream);
        check(nppiFilterSobelHorizBorder_8u16s_C1R_Ctx(input_, input_pitch_, size_, origin_, output_.as<Npp16s>(), output_.pitch(), size_,
                                                       NPP_MASK_SIZE_3_X_3, NPP_BORDER_REPLICATE, ctx),
              "nppiFilterSobelHorizBorder_8u16s_C1R_Ctx");
        check(nppiFilterSobelVertBorder_8u16s_C1R_Ctx(input_, input_pitch_, size_, origin_, vertical_.as<Npp16s>(), vertical_.pitch(),
                                                      size_, NPP_MASK_SIZE_3_X_3, NPP_BORDER_REPLICATE, ctx),
              "nppiFilterSobelVertBorder_8u16s_C1R_Ctx");
    }

private:
    DeviceBytes vertical_;
};

// NPP's integral has a zero first row and column, (W+1)x(H+1), 32-bit signed: it wraps beyond
// 2^31 (an 8K natural image reaches ~4e9), which does not change its time.
class Integral : public Base {
public:
    Integral(const Problem& p, const DeviceBuffer& in) : Base(p, in, (p.shape.width + 1) * 4, p.shape.height + 1) {
        if (p.shape.channels != 1) throw Error(fmt::format("npp.integral with {} channels", p.shape.channels), "a gray image (_C1R)");
    }
    std::string call() const override { return "nppiIntegral_8u32s_C1R_Ctx"; }
    Traffic traffic() const override {
        const double w = problem_.shape.width, h = problem_.shape.height;
        return {w * h, (w + 1) * (h + 1) * 4.0};
    }
    void enqueue(cudaStream_t stream) override {
        check(nppiIntegral_8u32s_C1R_Ctx(input_, input_pitch_, output_.as<Npp32s>(), output_.pitch(), size_, 0, stream_context(stream)),
              "nppiIntegral_8u32s_C1R_Ctx");
    }
};

}  // namespace

bool npp_built() { return true; }

std::string npp_version() {
    const NppLibraryVersion* v = nppGetLibVersion();
    return v == nullptr ? std::string("unknown") : fmt::format("{}.{}.{}", v->major, v->minor, v->build);
}

std::unique_ptr<NppBaseline> make_npp_baseline(const std::string& family, const Problem& problem, const DeviceBuffer& input) {
    if (family == "npp.gauss") return std::make_unique<Gauss>(problem, input);
    if (family == "npp.filter32f") return std::make_unique<Filter32f>(problem, input);
    if (family == "npp.separable32f") return std::make_unique<Separable32f>(problem, input);
    if (family == "npp.box") return std::make_unique<Box>(problem, input);
    if (family == "npp.sobel") return std::make_unique<Sobel>(problem, input);
    if (family == "npp.integral") return std::make_unique<Integral>(problem, input);
    throw Error(fmt::format("NPP row '{}'", family), "npp.gauss, npp.filter32f, npp.separable32f, npp.box, npp.sobel, npp.integral");
}

#endif

}  // namespace klab::bench
