// Two plans of one variant with scratch memory, launched on two streams at once, both give the
// reference's result.
#include <gtest/gtest.h>

#include <memory>

#include "tests/gpu/op_conformance.hpp"

namespace klab {
namespace {

using namespace op_conformance;

// --- plans on two streams ----------------------------------------------------------------------
// A variant with scratch memory gets it from its plan (LaunchPlan::scratch), never shared with
// another plan, so two plans of one variant launched on two streams at once must both give the
// reference's result. (When these variants kept one scratch allocation per device, two such
// launches overwrote each other's intermediates.) Every registered variant that asks for scratch
// on the problem of its op below is run; case names are <stem>__two_plans_on_two_streams.

Problem two_stream_problem(Operation op) {
    const ImageShape shape{640, 360, 3, Layout::aos};
    const Border border{BorderMode::reflect, 0};
    if (op == Operation::convolve) return convolve_problem(shape, masks::box(9), border);
    return op_problem(op, shape.width, shape.height, kFormats[1], border);
}

std::vector<const Variant*> variants_with_scratch() {
    std::vector<const Variant*> found;
    for (const Variant* v : Registry::instance().all()) {
        const Problem p = two_stream_problem(v->op());
        if (v->supports(p) && v->scratch_bytes(p, v->default_shape(p)) > 0) found.push_back(v);
    }
    return found;
}

// The reference's verdict on `actual`, the output of `variant` for `problem` on `input`.
template <class T>
Verification verify_against_reference(const Variant& variant, const Problem& problem, const ImageU8& input,
                                      const HostImage<T>& actual) {
    if constexpr (std::is_same_v<T, std::uint8_t>) {
        if (problem.op == Operation::sobel) return verify_exact(reference::sobel(input, problem.border, 0), actual);
        return verify_convolution(input, *problem.mask, problem.border,
                                  reference::convolve(input, *problem.mask, problem.border, 0), actual,
                                  variant.coefficient_error(problem));
    } else {
        return verify_exact(reference::integral<T>(input, 0), actual);
    }
}

// Two plans on two inputs, launched three times each, alternating between two streams, then
// both results verified.
template <class T>
void run_two_plans_on_two_streams(const Variant& variant, const Problem& problem) {
    const LaunchShape shape = variant.default_shape(problem);
    const ImageShape out_shape = output_shape(problem);
    const ImageU8 input_a = test::random_image(problem.shape, 71);
    const ImageU8 input_b = test::random_image(problem.shape, 72);
    DeviceImage<std::uint8_t> in_a(input_a), in_b(input_b);
    DeviceImage<T> out_a(out_shape), out_b(out_shape);
    std::unique_ptr<DeviceMask> mask;
    if (problem.mask) mask = std::make_unique<DeviceMask>(*problem.mask);
    const DeviceMaskView mask_view = mask ? mask->view() : DeviceMaskView{};
    const LaunchPlan a = prepare(variant, problem, DeviceBuffers{device_buffer(in_a), device_buffer(out_a), mask_view}, shape);
    const LaunchPlan b = prepare(variant, problem, DeviceBuffers{device_buffer(in_b), device_buffer(out_b), mask_view}, shape);
    ASSERT_EQ(a.scratch_bytes, variant.scratch_bytes(problem, shape));
    ASSERT_NE(a.scratch.get(), nullptr);
    ASSERT_NE(a.scratch.get(), b.scratch.get()) << "two plans share scratch memory";

    cudaStream_t streams[2] = {nullptr, nullptr};
    for (cudaStream_t& s : streams) KLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int repeat = 0; repeat < 3; ++repeat) {
        launch(a, streams[0]);
        launch(b, streams[1]);
    }
    for (cudaStream_t s : streams) {
        KLAB_CUDA_CHECK(cudaStreamSynchronize(s));
        KLAB_CUDA_CHECK(cudaStreamDestroy(s));
    }
    const Verification va = verify_against_reference(variant, problem, input_a, out_a.download());
    EXPECT_TRUE(va.ok()) << "plan a: " << va.summary();
    const Verification vb = verify_against_reference(variant, problem, input_b, out_b.download());
    EXPECT_TRUE(vb.ok()) << "plan b: " << vb.summary();
}

class PlansOnTwoStreams : public ::testing::TestWithParam<const Variant*> {
protected:
    void SetUp() override {
        if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device found";
    }
};

TEST_P(PlansOnTwoStreams, BothGiveTheReferenceResult) {
    const Variant& variant = *GetParam();
    const Problem problem = two_stream_problem(variant.op());
    SCOPED_TRACE(fmt::format("{} on {}", variant.name(), to_string(problem)));
    if (problem.op != Operation::integral) {
        run_two_plans_on_two_streams<std::uint8_t>(variant, problem);
    } else if (reference::integral_type(problem.shape.width, problem.shape.height) == reference::IntegralType::u32) {
        run_two_plans_on_two_streams<std::uint32_t>(variant, problem);
    } else {
        run_two_plans_on_two_streams<std::uint64_t>(variant, problem);
    }
}

// The four variants that need scratch are all found (a variant that stops asking for scratch, or a
// probe problem it stops supporting, would silently shrink the suite).
TEST(PlansOnTwoStreamsSuite, CoversTheVariantsWithScratch) {
    std::vector<std::string> names;
    for (const Variant* v : variants_with_scratch()) names.push_back(v->name());
    for (const char* name : {"conv.box_integral", "conv.separable_2pass", "integral.scan", "sobel.3kernel"}) {
        EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    }
}

std::string two_streams_case_name(const ::testing::TestParamInfo<const Variant*>& param) {
    std::string name = param.param->name() + "__two_plans_on_two_streams";
    return test::test_name(std::move(name));
}

INSTANTIATE_TEST_SUITE_P(Variants, PlansOnTwoStreams, ::testing::ValuesIn(variants_with_scratch()), two_streams_case_name);

}  // namespace
}  // namespace klab
