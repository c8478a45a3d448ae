// The exact test of the box variants (kExactBoxVariants): every border, box sizes from 1x1 to 31x31
// (those a variant takes, where it does not take every box) and boxes whose coefficient is not 1/n,
// compared element for element with the CPU reference; and conv.box_sliding_sums,
// conv.box_warp_scan, conv.box_warp_ring and conv.box_pixel_lanes with every launch shape of their
// tuning spaces on images of several tiles.
#include <gtest/gtest.h>

#include "autotune/search_space.hpp"
#include "tests/gpu/op_conformance.hpp"

namespace klab {
namespace {

using namespace op_conformance;

// --- the box variants, exactly -----------------------------------------------------------------
// verify_convolution would accept an off-by-one next to an fp32 rounding tie; the box variants
// promise identical results (kernels/box_sums.hpp proves why), so they are
// held to verify_exact, on every border, box sizes from 1x1 to 31x31 (larger than the images),
// non-square boxes, and boxes whose coefficient is not 1/n: saturating, negative, arbitrary, and
// 0.5 and 1/8, whose products m * S are exact ties at odd S (round half to even decides them).

struct BoxCase {
    Problem problem;
    PitchKind input_pitch;
    PitchKind output_pitch;
    bool awkward_shape;
    std::uint32_t seed;
};

std::vector<BoxCase> box_table(bool reduced) {
    std::vector<Mask> masks = {masks::box(1), masks::box(3), masks::box(9), masks::box(31), flat_mask(3, 7, 1.0f / 21, "box3x7"),
                               flat_mask(15, 1, 1.0f / 15, "box15x1"), flat_mask(5, 5, 1.0f, "ones5"),
                               flat_mask(7, 7, 0.0123f, "flat7_0_0123"), flat_mask(3, 3, -0.25f, "negative3"),
                               flat_mask(1, 1, 0.5f, "half1"), flat_mask(3, 3, 0.125f, "eighth3"),
                               flat_mask(5, 3, 300.0f, "saturating5x3"),
                               // The largest normalized box whose sums fit 16 bits (area 255:
                               // conv.box_pixel_lanes's paired row sums), and one past it whose
                               // width has paired sums (area 279: the other form); and a normalized
                               // box of every width that has a paired kernel (rx 0 to 7): box3 and
                               // box3x7, box5x9, box7, box9, box11x3, box13, box15x1 and box15x17
                               // here, box1x9 in the shape sweep below.
                               flat_mask(15, 17, static_cast<float>(1.0 / 255), "box15x17"),
                               flat_mask(9, 31, static_cast<float>(1.0 / 279), "box9x31"),
                               flat_mask(5, 9, static_cast<float>(1.0 / 45), "box5x9"), masks::box(7),
                               flat_mask(11, 3, static_cast<float>(1.0 / 33), "box11x3"),
                               flat_mask(13, 13, static_cast<float>(1.0 / 169), "box13")};
    std::vector<std::pair<int, int>> sizes = {{1, 1}, {2, 3}, {5, 5}, {17, 13}, {64, 48}, {127, 65}};
    if (reduced) {
        masks = {masks::box(3), masks::box(31), flat_mask(3, 7, 1.0f / 21, "box3x7"), flat_mask(3, 3, 0.125f, "eighth3")};
        sizes = {{2, 3}, {17, 13}};
    }
    std::vector<BoxCase> table;
    std::size_t n = 0;
    for (auto [w, h] : sizes)
        for (const Mask& mask : masks)
            for (const Border& border : all_borders()) {
                const Format f = kFormats[(n + n / 6) % 6];
                table.push_back({convolve_problem(ImageShape{w, h, f.channels, f.layout}, mask, border),
                                 kPitches[n % 3], kPitches[(n / 3 + 1) % 3], n % 2 == 1, static_cast<std::uint32_t>(9000 + n)});
                ++n;
            }
    return table;
}

const std::vector<BoxCase>& box_cases() {
    static const std::vector<BoxCase> cases = box_table(reduced_table());
    return cases;
}

std::vector<OpParam> box_params() {
    std::vector<OpParam> params;
    for (const char* name : kExactBoxVariants) {
        const Variant* variant = Registry::instance().find(name);
        if (variant == nullptr) continue;
        for (std::size_t i = 0; i < box_cases().size(); ++i) {
            if (takes_every_box(name) || variant->supports(box_cases()[i].problem)) params.push_back({variant, i});
        }
    }
    return params;
}

// All are registered (else the suite would shrink without a failure).
TEST(BoxExactSuite, CoversEveryBoxVariant) {
    for (const char* name : kExactBoxVariants) EXPECT_NE(Registry::instance().find(name), nullptr) << name;
}

// The variants that do not take every box case (takes_every_box) refuse exactly what their notes
// say, so that the suite's cases for them cannot shrink unnoticed: conv.box_warp_ring boxes wider
// than 9 or of area above 256, conv.box_pixel_lanes RGBA AoS. (No GPU needed.)
TEST(BoxExactSuite, RestrictedVariantsRefuseOnlyWhatTheyStateToRefuse) {
    const Variant& ring = Registry::instance().get("conv.box_warp_ring");
    const Variant& lanes = Registry::instance().get("conv.box_pixel_lanes");
    for (const BoxCase& c : box_cases()) {
        const Problem& p = c.problem;
        SCOPED_TRACE(to_string(p));
        EXPECT_EQ(static_cast<bool>(ring.supports(p)), up_to_9_wide_area_256(*p.mask));
        EXPECT_EQ(static_cast<bool>(lanes.supports(p)), !refuses_format(lanes.name(), p.shape.channels, p.shape.layout));
    }
}

class BoxExact : public ::testing::TestWithParam<OpParam> {
protected:
    void SetUp() override {
        if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device found";
    }
};

TEST_P(BoxExact, EqualsTheReference) {
    const Variant& variant = *GetParam().variant;
    const BoxCase& c = box_cases()[GetParam().index];
    const Problem& problem = c.problem;
    const LaunchShape shape = c.awkward_shape ? awkward_shape(variant, problem) : variant.default_shape(problem);
    SCOPED_TRACE(fmt::format("{} on {} with block {}", variant.name(), to_string(problem), to_string(shape)));
    ASSERT_TRUE(variant.supports(problem)) << variant.supports(problem).reason();
    const ImageU8 input = test::random_image(problem.shape, c.seed);
    DeviceImage<std::uint8_t> in(problem.shape, pitch_for(c.input_pitch, problem.shape, 1));
    in.upload(input);
    DeviceImage<std::uint8_t> out(problem.shape, pitch_for(c.output_pitch, problem.shape, 1));
    KLAB_CUDA_CHECK(cudaMemset(out.view().data, kSentinel, out.capacity_bytes()));
    const DeviceMask mask(*problem.mask);
    run(variant, problem, DeviceBuffers{device_buffer(in), device_buffer(out), mask.view()}, shape);
    const Verification v = verify_exact(reference::convolve(input, *problem.mask, problem.border, 0), out.download());
    EXPECT_TRUE(v.ok()) << v.summary();
}

// A box variant with every shape of its tuning space on images several tiles wide and several
// strips tall, so that tiles meet inside rows, strips meet, the strips away from the top and
// bottom (no row mapping) and the bordered ones both run, and tiles end past the row. Aligned rows
// (the vector paths) and odd pitches (byte by byte); normalized boxes and others; every border.
// Returns the number of shapes run.
std::size_t expect_every_shape_exact(const char* name) {
    const Variant& variant = Registry::instance().get(name);
    struct Image {
        ImageShape shape;
        PitchKind pitch;
    };
    const Image images[] = {{{2011, 101, 3, Layout::aos}, PitchKind::allocator},
                            {{4100, 70, 1, Layout::aos}, PitchKind::odd},
                            {{700, 97, 4, Layout::soa}, PitchKind::allocator}};
    const Mask boxes[] = {masks::box(3), masks::box(31), flat_mask(9, 5, 1.0f, "ones9x5"), flat_mask(1, 9, 1.0f / 9, "box1x9")};
    struct Case {
        Image image;
        Mask mask;
        Border border;
    };
    const std::vector<Border> borders = all_borders();
    std::vector<Case> cases;
    const auto add_rotating = [&](const Image& image, const Mask& mask) {  // the borders in turn
        cases.push_back({image, mask, borders[cases.size() % borders.size()]});
    };
    for (const Image& image : images)
        for (const Mask& mask : boxes) add_rotating(image, mask);
    // A one-row box on 321 rows: at 16 rows per strip the last strip has one row, fewer than the
    // rows a strip copies ahead (conv.box_warp_ring), and ends at the image's last row.
    add_rotating(Image{{1000, 321, 3, Layout::aos}, PitchKind::allocator}, flat_mask(9, 1, 1.0f / 9, "box9x1"));
    // Widths of whole 16-pixel groups on aligned rows, normalized boxes (rx 15 and 4), under the
    // borders whose lanes outside the row conv.box_pixel_lanes fills from 16-byte loads (its edge
    // tiles' fast walk): the row's end pixel repeated, the other end, the value. 1008 and 1040 pixels
    // end inside a tile, so that lanes lie past the one right of the row too.
    const Image whole_groups[] = {{{1008, 80, 3, Layout::aos}, PitchKind::allocator}, {{1040, 70, 1, Layout::aos}, PitchKind::allocator}};
    for (const Image& image : whole_groups)
        for (const Mask& mask : {masks::box(31), flat_mask(9, 5, static_cast<float>(1.0 / 45), "box9x5")})
            for (const Border& border : {Border{BorderMode::replicate, 0}, Border{BorderMode::wrap, 0}, Border{BorderMode::constant, 77}})
                cases.push_back({image, mask, border});
    std::size_t n = 0, shapes_run = 0;
    for (const auto& [image, mask, border] : cases) {
        ++n;
        const Problem problem = convolve_problem(image.shape, mask, border);
        if (!takes_every_box(name) && !variant.supports(problem)) continue;
        const ImageU8 input = test::random_image(problem.shape, static_cast<std::uint32_t>(500 + n));
        const ImageU8 expected = reference::convolve(input, mask, border, 0);
        DeviceImage<std::uint8_t> in(problem.shape, pitch_for(image.pitch, problem.shape, 1));
        in.upload(input);
        const DeviceMask device_mask(mask);
        // The tuner's own enumeration: every block shape crossed with every parameter value, each
        // candidate whether included or not (the occupancy minimum only marks it).
        const autotune::SearchSpace space = autotune::search_space(variant, problem, 0.01, autotune::device_oracle());
        for (const autotune::Candidate& candidate : space.candidates) {
            const LaunchShape& shape = candidate.shape;
            if (!variant.check_shape(problem, shape)) continue;
            SCOPED_TRACE(fmt::format("{} {} with {}", name, to_string(problem), to_string(shape)));
            DeviceImage<std::uint8_t> out(problem.shape, pitch_for(image.pitch, problem.shape, 1));
            run(variant, problem, DeviceBuffers{device_buffer(in), device_buffer(out), device_mask.view()}, shape);
            const Verification v = verify_exact(expected, out.download());
            EXPECT_TRUE(v.ok()) << v.summary();
            ++shapes_run;
        }
    }
    return shapes_run;
}

// conv.box_sliding_sums: warps, group rows and strip rows (24 shapes, most of which fit every case).
TEST(BoxSlidingSumsShapes, EveryShapeOfTheTuningSpaceIsExact) {
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device found";
    EXPECT_GE(expect_every_shape_exact("conv.box_sliding_sums"), 12u * 10u);
}

// conv.box_warp_scan: warps and strip rows (9 shapes, all of which fit every case).
TEST(BoxWarpScanShapes, EveryShapeOfTheTuningSpaceIsExact) {
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device found";
    EXPECT_EQ(expect_every_shape_exact("conv.box_warp_scan"), 25u * 9u);
}

// conv.box_warp_ring: warps and strip rows (9 shapes) on the boxes it takes (box 31 is not one).
TEST(BoxWarpRingShapes, EveryShapeOfTheTuningSpaceIsExact) {
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device found";
    EXPECT_EQ(expect_every_shape_exact("conv.box_warp_ring"), 16u * 9u);
}

// conv.box_pixel_lanes: warps and strip rows (27 shapes) on every case (none is RGBA AoS), and the
// same 27 with loads=1 (the ring) on the 7 cases of RGB AoS boxes up to 15 rows high (box3,
// ones9x5, box1x9, box9x1 and box9x5 under three borders; box9x1's ring is one row).
TEST(BoxPixelLanesShapes, EveryShapeOfTheTuningSpaceIsExact) {
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device found";
    EXPECT_EQ(expect_every_shape_exact("conv.box_pixel_lanes"), 25u * 27u + 7u * 27u);
}

std::string box_case_name(const ::testing::TestParamInfo<OpParam>& param) {
    const Problem& p = box_cases()[param.param.index].problem;
    std::string name = fmt::format("{}__exact_{:04}_{}x{}x{}_{}_{}_{}", param.param.variant->name(), param.param.index,
                                   p.shape.width, p.shape.height, p.shape.channels, to_string(p.shape.layout),
                                   to_string(p.border), p.mask->name());
    return test::test_name(std::move(name));
}

INSTANTIATE_TEST_SUITE_P(Variants, BoxExact, ::testing::ValuesIn(box_params()), box_case_name);

}  // namespace
}  // namespace klab
