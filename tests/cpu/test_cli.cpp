// The klab executable end to end: wrong arguments name themselves and what is allowed, nothing
// is written on failure, and `apply --backend cpu` writes what the reference computes.
// Batches of `klab apply` are tested in test_cli_batch.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "harness/device_info.hpp"
#include "harness/filter_spec.hpp"
#include "harness/io/image_io.hpp"
#include "harness/reference/reference.hpp"
#include "harness/variant.hpp"
#include "harness/version.hpp"
#include "tests/common/run_command.hpp"
#include "tests/common/test_util.hpp"
#include "tests/cpu/cli_test_fixture.hpp"

namespace klab {
namespace {

using namespace cli_fixtures;

TEST_F(Cli, WrongArgumentsNameThemselvesAndWhatIsAllowed) {
    const std::string out = (dir / "out.png").string();
    expect_failure("apply --backend tpu --filter box:3 " + input + " " + out, "--backend");
    expect_failure("apply --backend tpu --filter box:3 " + input + " " + out, "cpu");
    expect_failure("apply --filter blur:3 " + input + " " + out, "unknown filter 'blur:3'; allowed: box:K");
    expect_failure("apply --filter box:4 " + input + " " + out, "box size 4 is not supported");
    expect_failure("apply --filter box:3 --border clamp " + input + " " + out, "unknown border mode 'clamp'");
    expect_failure("apply --filter box:3 --layout planar " + input + " " + out, "--layout");
    expect_failure("apply --filter box:3 " + (dir / "missing.png").string() + " " + out,
                   "IN '" + (dir / "missing.png").string() + "' cannot be read: no such file");
    fs::create_symlink(dir / "loop_b.png", dir / "loop_a.png");  // a loop of symbolic links: said so
    fs::create_symlink(dir / "loop_a.png", dir / "loop_b.png");
    expect_failure("apply --filter box:3 " + (dir / "loop_a.png").string() + " " + out, "Too many levels of symbolic links");
    expect_failure("apply --filter box:3 " + input + " " + (dir / "out.tiff").string(), "out.tiff");
    expect_failure("apply --filter box:3 --variant conv.global " + input + " " + out, "--variant");
    expect_failure("apply --filter box:3 --block 32x8 " + input + " " + out, "--block 32x8 with --backend cpu");
    expect_failure("apply --filter box:3 --verify " + input + " " + out, "--verify with --backend cpu");
    expect_failure("apply " + input + " " + out, "--filter is required");
    expect_failure("frobnicate", "frobnicate");
    expect_failure("apply --threads 5000 --filter box:3 " + input + " " + out, "--threads");
    expect_failure("apply --filter box:3 " + input + " " + (dir / "no-such-dir" / "out.png").string(),
                   "directory '" + (dir / "no-such-dir").string() + "' does not exist");
    fs::create_directory(dir / "taken.png");  // an output path that is a directory: refused before the filtering
    expect_failure("apply --filter box:3 " + input + " " + (dir / "taken.png").string(),
                   "cannot write '" + (dir / "taken.png").string() + "': it is an existing directory");
    EXPECT_FALSE(fs::exists(out)) << "a failed apply must not write its output";
}

// Output problems are found before the (possibly long) filtering starts, and nothing is written.
TEST_F(Cli, OutputThatCannotHoldTheResultIsRefusedUpFront) {
    const std::string rgba = (dir / "rgba.png").string();
    io::write_image(rgba, test::random_image({9, 9, 4, Layout::aos}, 4));
    const std::string jpeg = (dir / "out.jpg").string();
    expect_failure("apply --filter box:3 " + rgba + " " + jpeg, "JPEG cannot store an image with 4 channels");
    EXPECT_FALSE(fs::exists(jpeg));
    // Sobel makes one channel, which a PGM holds; a box keeps RGB, which it does not.
    const std::string pgm = (dir / "edges.pgm").string();
    EXPECT_EQ(klab_cli("apply --filter sobel " + rgba + " " + pgm).exit_code, 0);
    EXPECT_TRUE(fs::exists(pgm));
    const std::string rgb = (dir / "rgb.png").string();
    io::write_image(rgb, test::random_image({9, 9, 3, Layout::aos}, 4));
    const std::string colour_pgm = (dir / "colour.pgm").string();
    expect_failure("apply --filter box:3 " + rgb + " " + colour_pgm,
                   "a .pgm file holds a gray image, and this one has 3 channels (RGB)");
    EXPECT_FALSE(fs::exists(colour_pgm));
}

// klab gen writes gray for a .pgm name unless told otherwise, and refuses colour there.
TEST_F(Cli, GenWritesGrayForAPgmName) {
    const fs::path pgm = dir / "g.pgm", ppm = dir / "c.ppm";
    ASSERT_EQ(klab_cli("gen --size 17x13 " + pgm.string()).exit_code, 0);
    EXPECT_EQ(io::read_image(pgm).shape(), (ImageShape{17, 13, 1, Layout::aos}));
    ASSERT_EQ(klab_cli("gen --size 17x13 " + ppm.string()).exit_code, 0);
    EXPECT_EQ(io::read_image(ppm).shape(), (ImageShape{17, 13, 3, Layout::aos}));
    expect_failure("gen --size 17x13 --channels 3 " + (dir / "rgb.pgm").string(),
                   "a .pgm file holds a gray image, and this one has 3 channels (RGB)");
    expect_failure("gen --size 17x13 --channels 0 " + (dir / "zero.png").string(), "--channels");
    EXPECT_FALSE(fs::exists(dir / "rgb.pgm"));
    EXPECT_FALSE(fs::exists(dir / "zero.png"));
}

// A command line the option parser refuses exits 2, as any refused input does (not CLI11's 104 to 109).
TEST_F(Cli, ACommandLineTheParserRefusesExits2) {
    for (const std::string arguments : {"", "apply x y", "compare --threshold abc x y", "apply --backend foo --filter box:3 x y",
                                        "gen --all --pattern noise", "list --bogus", "run --study tiny"}) {
        const Result r = klab_cli(arguments);
        EXPECT_EQ(r.exit_code, 2) << arguments << "\n" << r.output;
        EXPECT_FALSE(r.output.empty()) << arguments;
    }
    EXPECT_EQ(klab_cli("--version").exit_code, 0);
    expect_failure("--bogus", "unknown option '--bogus' before the command; allowed: --help, --version, or a command first: info");
    // A value that is no number, or outside the set or range, says so and what is allowed.
    expect_failure("gen --size 4x4 --channels abc " + (dir / "a.png").string(),
                   "--channels: 'abc' is not among the choices; allowed: 1, 3, 4");
    expect_failure("apply --filter box:3 --jpeg-quality abc x.png y.jpg",
                   "--jpeg-quality: 'abc' is not an integer; allowed: an integer from 1 to 100");
    expect_failure("apply --filter box:3 --jpeg-quality 101 x.png y.jpg",
                   "--jpeg-quality: 101 is out of range; allowed: an integer from 1 to 100");
    expect_failure("tune --plan-for H200 --min-occupancy nan", "--min-occupancy: nan is out of range; allowed: a number from 0.01 to 1");
    expect_failure("run --repetitions 1.5", "--repetitions: '1.5' is not an integer");
    expect_failure("tune --plan-for H200 --min-samples 3000000000", "--min-samples: 3000000000 is out of range");
    EXPECT_FALSE(fs::exists(dir / "a.png"));
}

TEST_F(Cli, EveryCommandHasHelp) {
    for (const char* command : {"", "info", "list", "apply", "gen", "run"}) {
        const Result r = klab_cli(std::string(command) + " --help");
        EXPECT_EQ(r.exit_code, 0) << command;
        EXPECT_NE(r.output.find("Usage"), std::string::npos) << command;
    }
}

TEST_F(Cli, InfoAndListAnswerWithoutAGpu) {
    const Result info = klab_cli("info");
    EXPECT_EQ(info.exit_code, 0);
    EXPECT_TRUE(info.output.find("no CUDA device found") != std::string::npos ||
                info.output.find("device 0:") != std::string::npos)
        << info.output;
    // The commit results of this build will name, as its tuning records write it.
    EXPECT_NE(info.output.find("klab built from commit " + build_version_text() + " with CUDA"), std::string::npos) << info.output;
    const Result json = klab_cli("info --json");
    EXPECT_EQ(json.exit_code, 0);
    EXPECT_NE(json.output.find("\"devices\""), std::string::npos);
    const nlohmann::json parsed = nlohmann::json::parse(json.output);
    EXPECT_EQ(parsed.at("build").at("commit").get<std::string>(), build_version().commit);
    EXPECT_EQ(parsed.at("build").at("dirty").get<bool>(), build_version().dirty);
    EXPECT_EQ(klab_cli("list").exit_code, 0);
}

const char* const kVariants[] = {"conv.constant", "conv.global", "conv.halo_tiled", "conv.tiled_2batch"};

TEST_F(Cli, ListNamesEveryVariantAndWhatItSupports) {
    const Result r = klab_cli("list");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const char* name : kVariants) {
        const std::size_t at = r.output.find(std::string("\n") + name + " (convolve)");
        ASSERT_NE(at, std::string::npos) << name << "\n" << r.output;
        // The variant's own block, up to the next blank line, says what it supports.
        const std::string block = r.output.substr(at, r.output.find("\n\n", at + 1) - at);
        EXPECT_NE(block.find("supports:      channels 1,3,4 · aos,soa · borders all · masks 1x1..31x31"),
                  std::string::npos)
            << block;
        EXPECT_NE(block.find("default block: 32x"), std::string::npos) << block;
        EXPECT_EQ(block.find("not supported"), std::string::npos) << block;
    }
    // conv.halo_tiled's default block grows with the mask.
    EXPECT_NE(r.output.find("32x32 (masks 17x17..31x31)"), std::string::npos) << r.output;
}

// One rule that refuses many masks is one line, whose reason is the variant's own words for the
// first of them: conv.box_warp_ring's "up to 9 wide" covers 11x11 to 31x31, its "box masks only"
// both 3x3 masks that are not boxes.
TEST_F(Cli, ListGroupsARefusalOfManyMasksInOneLine) {
    const Result r = klab_cli("list");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::size_t at = r.output.find("\nconv.box_warp_ring (convolve)");
    ASSERT_NE(at, std::string::npos) << r.output;
    const std::string block = r.output.substr(at, r.output.find("\n\n", at + 1) - at);
    EXPECT_NE(block.find("not supported: masks 11x11..31x31: boxes up to 9 wide and of area up to 256 (box11: 11x11)"),
              std::string::npos)
        << block;
    EXPECT_NE(block.find("not supported: masks 3x3: box masks only (all coefficients equal); gauss3 has unequal coefficients (60 "
                         "problems"),
              std::string::npos)
        << block;
    EXPECT_EQ(block.find("box13"), std::string::npos) << block;
    // A size in the rule's own words ("conv.register_window takes up to 9x9") keeps 9x9 in the group.
    const std::size_t shuffle = r.output.find("\nconv.shuffle_window (convolve)");
    ASSERT_NE(shuffle, std::string::npos) << r.output;
    const std::string shuffle_block = r.output.substr(shuffle, r.output.find("\n\n", shuffle + 1) - shuffle);
    EXPECT_NE(shuffle_block.find("not supported: masks 5x5..31x31, 3x7, 7x3: masks up to 3x3: box5 is 5x5"), std::string::npos)
        << shuffle_block;
    // Of two default shapes, the one whose problems span every dimension is "the other" problems.
    const std::size_t sliding = r.output.find("\nconv.box_sliding_sums (convolve)");
    ASSERT_NE(sliding, std::string::npos) << r.output;
    EXPECT_NE(r.output.find("32x4 group=16 rows=32 (the other probed problems)", sliding), std::string::npos) << r.output;
}

TEST_F(Cli, ListJsonParsesAndNamesEveryVariant) {
    const Result r = klab_cli("list --json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json json = nlohmann::json::parse(r.output);
    EXPECT_TRUE(json.at("registry_errors").empty());
    std::vector<std::string> names;
    for (const auto& v : json.at("variants")) {
        const std::string name = v.at("name").get<std::string>();
        names.push_back(name);
        EXPECT_FALSE(v.at("default_shapes").empty()) << name;
        EXPECT_EQ(v.at("supports").at("channels"), nlohmann::json({1, 3, 4})) << name;
        // The seeds' convolution variants run every probed problem.
        if (std::find(std::begin(kVariants), std::end(kVariants), name) == std::end(kVariants)) continue;
        EXPECT_EQ(v.at("op"), "convolve");
        EXPECT_EQ(v.at("supports").at("supported"), v.at("supports").at("probed")) << v.dump(2);
        EXPECT_TRUE(v.at("unsupported").empty()) << v.dump(2);
    }
    // One entry per registered variant, sorted by name, the seeds' among them.
    std::vector<std::string> registered;
    for (const Variant* v : Registry::instance().all()) registered.push_back(v->name());
    EXPECT_EQ(names, registered);
    for (const char* name : kVariants) EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

// These are checked before any device call, so they answer the same with or without a GPU.
TEST_F(Cli, GpuOptionsAreCheckedBeforeTheDevice) {
    const std::string out = (dir / "out.png").string();
    const std::string args = " " + input + " " + out;
    expect_failure("apply --backend gpu --variant nosuch --filter box:3" + args,
                   "no variant named \"nosuch\"; allowed: ");
    for (const char* name : {"conv.constant", "conv.global", "conv.halo_tiled"}) {  // each: a new variant may sort between them
        expect_failure("apply --backend gpu --variant nosuch --filter box:3" + args, name);
    }
    expect_failure("apply --backend gpu --block 64x --filter box:3" + args, "block shape \"64x\"; allowed: XxY");
    expect_failure("apply --backend gpu --block 0x8 --filter box:3" + args, "block shape \"0x8\"");
    // Integral variants exist, but an integral image cannot go through strips: klab apply keeps it on the CPU.
    expect_failure("apply --backend gpu --filter integral" + args, "klab apply computes integral images on the CPU only");
    expect_failure("apply --backend gpu --filter integral" + args, "--backend cpu for integral");
    expect_failure("apply --backend gpu --variant sobel.fused --filter box:3" + args, "--variant sobel.fused computes sobel");
    EXPECT_FALSE(fs::exists(out));
}

TEST_F(Cli, ApplyOnGpuRunsAVariantOrNamesTheMissingDevice) {
    const std::string out = (dir / "out.png").string();
    const std::string args = " " + input + " " + out;
    if (!cuda_device_available()) {
        expect_failure("apply --backend gpu --filter box:3" + args, "--backend gpu: no CUDA device found");
        expect_failure("apply --backend gpu --variant conv.global --block 16x16 --verify --filter box:3" + args,
                       "no CUDA device found");
        EXPECT_FALSE(fs::exists(out));
        return;
    }
    // An empty tuning cache (the committed ones depend on the machine): the default for a separable
    // mask, and the log says why.
    const Result automatic = klab_cli("apply --backend gpu --verify --filter gaussian:5 --border mirror --results " +
                                      (dir / "no-results").string() + args);
    ASSERT_EQ(automatic.exit_code, 0) << automatic.output;
    EXPECT_NE(automatic.output.find("variant conv.separable_fused (auto)"), std::string::npos) << automatic.output;
    EXPECT_NE(automatic.output.find("default choice conv.separable_fused (the mask is separable)"), std::string::npos)
        << automatic.output;
    EXPECT_NE(automatic.output.find("verified against the CPU reference: ok"), std::string::npos) << automatic.output;
    // An integer mask must match the reference exactly, in either layout, with any variant and block.
    const ImageU8 expected = reference::convolve(io::read_image(input), masks::laplacian(), {BorderMode::wrap, 0});
    for (const char* variant : kVariants) {
        for (const char* layout : {"aos", "soa"}) {
            fs::remove(out);
            const Result r = klab_cli(fmt::format("apply --backend gpu --variant {} --block 16x16 --layout {} --verify "
                                                  "--filter laplacian --border wrap{}",
                                                  variant, layout, args));
            ASSERT_EQ(r.exit_code, 0) << r.output;
            EXPECT_NE(r.output.find(fmt::format("variant {}, block 16x16", variant)), std::string::npos) << r.output;
            EXPECT_TRUE(same_pixels(io::read_image(out), expected)) << variant << " " << layout;
        }
    }
    // A block the variant refuses is named, and nothing is written.
    fs::remove(out);
    expect_failure("apply --backend gpu --variant conv.halo_tiled --block 8x8 --filter box:9" + args, "block 8x8");
    EXPECT_FALSE(fs::exists(out));
}

TEST_F(Cli, ApplyOnCpuWritesWhatTheReferenceComputes) {
    const ImageU8 image = io::read_image(input);
    const struct {
        std::string filter, border;
    } cases[] = {{"gaussian:5", "mirror"}, {"box:3", "constant:50"}, {"sharpen", "wrap"}, {"unsharp:5:1.0:1.5", "reflect"}};
    for (const auto& c : cases) {
        for (const char* layout : {"aos", "soa"}) {
            const std::string out = (dir / "out.png").string();
            const Result r = klab_cli(fmt::format("apply --backend cpu --layout {} --filter {} --border {} {} {}", layout,
                                                  c.filter, c.border, input, out));
            ASSERT_EQ(r.exit_code, 0) << r.output;
            const ImageU8 expected =
                reference::convolve(image, *parse_filter_spec(c.filter).mask, parse_border(c.border));
            EXPECT_TRUE(same_pixels(io::read_image(out), expected)) << c.filter << " " << layout;
        }
    }
    const std::string edges = (dir / "edges.pgm").string();
    ASSERT_EQ(klab_cli("apply --filter sobel " + input + " " + edges).exit_code, 0);
    EXPECT_TRUE(same_pixels(io::read_image(edges), reference::sobel(image, {BorderMode::replicate, 0})));
    const std::string sums = (dir / "integral.png").string();
    ASSERT_EQ(klab_cli("apply --filter integral " + input + " " + sums).exit_code, 0);
    const ImageU8 visual = io::read_image(sums);
    for (int c = 0; c < 3; ++c) EXPECT_EQ(visual.at(22, 16, c), 255);  // the largest sum maps to 255
}

TEST_F(Cli, RunWritesTheSmokeStudyAndItsReport) {
    const fs::path out = dir / "results" / "here";
    const Result r = klab_cli("run --study smoke --repetitions 2 --no-tune --results " + (dir / "results").string() +
                              " --out " + out.string());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    // Without a GPU it says so plainly; with one it names it.
    EXPECT_TRUE(r.output.find("No GPU found") != std::string::npos || r.output.find("GPU: ") != std::string::npos) << r.output;
    EXPECT_TRUE(fs::exists(out / "bench.json")) << r.output;
    EXPECT_TRUE(fs::exists(out / "report.md")) << r.output;
    for (const auto& entry : fs::directory_iterator(out)) {
        EXPECT_EQ(entry.path().filename().string().find("partial"), std::string::npos) << entry.path();
    }
    expect_failure("run --study huge", "huge");
    expect_failure("run --repetitions 0", "--repetitions");
}

}  // namespace
}  // namespace klab
