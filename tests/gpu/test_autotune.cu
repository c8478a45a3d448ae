// The autotuner on the device: the occupancy API agrees with the offline calculator, tuning two
// variants on a small image verifies every candidate and writes a cache that `klab apply` then
// uses (its log says so), and a candidate that computes wrong pixels is recorded as invalid
// while the tune goes on.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "autotune/gpu_model.hpp"
#include "autotune/occupancy.hpp"
#include "autotune/search_space.hpp"
#include "autotune/tuner.hpp"
#include "autotune/tuning_cache.hpp"
#include "harness/io/image_io.hpp"
#include "harness/kernel_launch.hpp"
#include "harness/numeric.hpp"
#include "harness/sampling.hpp"
#include "harness/synth.hpp"
#include "tests/common/run_command.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab::autotune {
namespace {

namespace fs = std::filesystem;

// conv.global's arithmetic, except that blocks 64 wide write 0 at pixel (5, 3): a variant with
// one broken shape, never registered.
template <int Channels>
__global__ void broken_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, const float* mask, int mask_width,
                              int mask_height, Border border) {
    const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
    if (x >= in.shape.width || y >= in.shape.height) return;
    float acc[Channels] = {};
    for (int j = 0; j < mask_height; ++j) {
        for (int i = 0; i < mask_width; ++i) {
            for (int c = 0; c < Channels; ++c) {
                acc[c] = fmaf(mask[j * mask_width + i],
                              static_cast<float>(sample(in, x + i - mask_width / 2, y + j - mask_height / 2, c, border)), acc[c]);
            }
        }
    }
    const bool broken = blockDim.x == 64 && x == 5 && y == 3;
    for (int c = 0; c < Channels; ++c) out.at(x, y, c) = broken ? 0 : saturate_round_u8(acc[c]);
}

class BrokenWhen64Wide final : public Variant {
public:
    std::string name() const override { return "test.broken_when_64_wide"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override { return "test double"; }
    Support supports(const Problem& p) const override { return p.shape.channels == 3 ? Support::yes() : Support::no("RGB only"); }
    TuningSpace tuning_space() const override { return block_tuning_space(LaunchShape{32, 8, {}}); }
    std::vector<KernelLaunch> kernels(const Problem& p, const LaunchShape& s) const override {
        return {make_launch(&broken_kernel<3>, "broken_kernel", covering_grid(p.shape, s), block_of(s))};
    }
    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const DeviceBuffers& b = plan.buffers;
        enqueue_kernel(plan.kernels[0], stream, &broken_kernel<3>, b.input.view<const std::uint8_t>(), b.output.view<std::uint8_t>(),
                       b.mask.data, b.mask.width, b.mask.height, plan.problem.border);
    }
};

TuneOptions quick_options() {
    TuneOptions o;
    o.timing.budget_seconds = 0.01;
    o.timing.min_samples = 3;
    return o;
}

class Autotune : public test::GpuTest {};

TEST_F(Autotune, TheOccupancyApiAgreesWithTheOfflineCalculator) {
    const GpuModel model = current_gpu_model();
    int compared = 0;
    for (const Variant* variant : Registry::instance().for_op(Operation::convolve)) {
        for (const char* text : {"HD/3x3/c3/aos", "HD/9x9/c1/soa", "HD/31x31/c4/aos"}) {
            const Problem problem = representative_problem(parse_problem_class(text));
            if (!variant->supports(problem)) continue;
            // Every candidate the API answered for, excluded ones included.
            const SearchSpace space = search_space(*variant, problem, 0.01, device_oracle());
            for (const Candidate& candidate : space.candidates) {
                if (candidate.kernels.empty()) continue;
                // The oracle answered for the launches in order (up to one it refused), each at its
                // own block: a setup kernel, as conv.integer_mma's mask digits, runs a fixed block,
                // not the candidate's.
                const std::vector<KernelLaunch> launches = variant->kernels(problem, candidate.shape);
                ASSERT_LE(candidate.kernels.size(), launches.size()) << variant->name() << " " << to_string(candidate.shape);
                for (std::size_t i = 0; i < candidate.kernels.size(); ++i) {
                    const KernelOccupancy& k = candidate.kernels[i];
                    const KernelLaunch& l = launches[i];
                    const int threads = static_cast<int>(l.block.x * l.block.y * l.block.z);
                    const Occupancy offline = occupancy(model, k.resources, threads, l.dynamic_shared_bytes);
                    EXPECT_EQ(offline.blocks_per_sm, k.occupancy.blocks_per_sm)
                        << variant->name() << " " << text << " " << to_string(candidate.shape) << " " << k.kernel_name;
                    ++compared;
                }
            }
        }
    }
    EXPECT_GT(compared, 100);
}

TEST_F(Autotune, TheModelTableMatchesThisDeviceWhereItKnowsIt) {
    const GpuModel device = current_gpu_model();
    const std::optional<GpuModel> known = find_gpu_model(device.name);
    if (!known || known->name != device.name) GTEST_SKIP() << device.name << " is not in the model table";
    EXPECT_EQ(known->cc_major, device.cc_major);
    EXPECT_EQ(known->cc_minor, device.cc_minor);
    EXPECT_EQ(known->sm_count, device.sm_count);
    EXPECT_EQ(known->max_threads_per_block, device.max_threads_per_block);
    EXPECT_EQ(known->max_threads_per_sm, device.max_threads_per_sm);
    EXPECT_EQ(known->registers_per_block, device.registers_per_block);
    EXPECT_EQ(known->registers_per_sm, device.registers_per_sm);
    EXPECT_EQ(known->shared_per_block, device.shared_per_block);
    EXPECT_EQ(known->shared_per_sm, device.shared_per_sm);
    EXPECT_EQ(known->shared_per_block_optin, device.shared_per_block_optin);
    EXPECT_EQ(known->reserved_shared_per_block, device.reserved_shared_per_block);
}

TEST_F(Autotune, TuningTwoVariantsVerifiesEveryCandidateAndApplyUsesTheCache) {
    const fs::path dir = fs::temp_directory_path() / fmt::format("klab_autotune_gpu_{}", ::getpid());
    fs::remove_all(dir);
    const ProblemClass small = parse_problem_class("480p/3x3/c3/aos");
    Tuner tuner(quick_options());
    std::vector<TuningRecord> records;
    for (const char* name : {"conv.global", "conv.tiled_2batch"}) {
        const Variant& variant = Registry::instance().get(name);
        int calls = 0;
        const TuningRecord r = tuner.tune(variant, small, [&](int done, int total, const LaunchShape&) {
            ++calls;
            EXPECT_LE(done, total);
        });
        SCOPED_TRACE(name);
        EXPECT_GT(calls, 10);
        EXPECT_EQ(r.variant, name);
        EXPECT_EQ(r.source_hash, source_hash(variant));
        EXPECT_NE(r.source_hash, "unknown");
        EXPECT_TRUE(r.invalid.empty()) << r.invalid.front().reason;
        ASSERT_FALSE(r.top.empty());
        EXPECT_LE(r.top.size(), 3u);
        EXPECT_EQ(r.requested_min_occupancy, 1.0);
        EXPECT_EQ(r.note.empty(), r.min_occupancy == 1.0) << r.note;
        for (const MeasuredCandidate& m : r.top) {
            EXPECT_GE(m.occupancy.fraction, r.min_occupancy);
            EXPECT_GE(m.samples, 3);
            EXPECT_LE(m.us.q1, m.us.median);
            EXPECT_LE(m.us.median, m.us.q3);
            ASSERT_FALSE(m.kernels.empty());
            EXPECT_GT(m.kernels[0].resources.registers_per_thread, 0);
        }
        ASSERT_TRUE(r.best_relaxed && r.rule_cost && r.default_shape);
        EXPECT_GE(*r.rule_cost, 0.0);
        EXPECT_GE(r.best_relaxed->occupancy.fraction, 0.5);
        records.push_back(r);
    }
    std::vector<std::string> warnings;
    store(dir, records, warnings);
    EXPECT_TRUE(warnings.empty());

    const fs::path image = dir / "in.png";
    io::write_image(image, synth::generate(synth::Pattern::natural, 640, 480, 3));
    const auto apply = [&](const std::string& variant) {
        return test::run_command(fmt::format("{} apply --backend gpu --variant {} --filter gaussian:3 --results {} {} {}",
                                             KLAB_CLI_PATH, variant, dir.string(), image.string(), (dir / "out.png").string()));
    };
    const test::CommandResult tuned = apply("conv.tiled_2batch");
    EXPECT_EQ(tuned.exit_code, 0) << tuned.output;
    const std::string expected = fmt::format("block {} from the tuning cache (exact problem class on this GPU",
                                             to_string(records[1].top.front().shape));
    EXPECT_NE(tuned.output.find(expected), std::string::npos) << tuned.output;
    EXPECT_NE(tuned.output.find("re-verified on a 509x287 image"), std::string::npos) << tuned.output;
    const test::CommandResult untuned = apply("conv.constant");
    EXPECT_EQ(untuned.exit_code, 0) << untuned.output;
    EXPECT_NE(untuned.output.find("the variant's default: no usable tuning"), std::string::npos) << untuned.output;
    fs::remove_all(dir);
}

TEST_F(Autotune, ACandidateWithWrongPixelsIsRecordedInvalidAndTheTuneGoesOn) {
    const BrokenWhen64Wide broken;
    Tuner tuner(quick_options());
    const TuningRecord r = tuner.tune(broken, parse_problem_class("480p/5x5/c3/aos"));
    ASSERT_FALSE(r.invalid.empty());
    for (const InvalidCandidate& i : r.invalid) {
        EXPECT_EQ(i.shape.block_x, 64) << to_string(i.shape);
        EXPECT_NE(i.reason.find("differs from the CPU reference"), std::string::npos) << i.reason;
        EXPECT_NE(i.reason.find("x=5 y=3"), std::string::npos) << i.reason;
    }
    for (const MeasuredCandidate& m : r.top) EXPECT_NE(m.shape.block_x, 64);

    const Problem problem = representative_problem(parse_problem_class("480p/5x5/c3/aos"));
    EXPECT_FALSE(verify_shape_once(broken, problem, LaunchShape{64, 4, {}}).ok());
    EXPECT_TRUE(verify_shape_once(broken, problem, LaunchShape{32, 8, {}}).ok());
}

}  // namespace
}  // namespace klab::autotune
