// The klab executable end to end: wrong arguments name themselves and what is allowed, nothing
// is written on failure, and `apply --backend cpu` writes what the reference computes.
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
#include "tests/common/run_command.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

namespace fs = std::filesystem;

using Result = test::CommandResult;

Result klab_cli(const std::string& arguments) { return test::run_command(std::string(KLAB_CLI_PATH) + " " + arguments); }

class Cli : public ::testing::Test {
protected:
    void SetUp() override {
        dir = fs::temp_directory_path() /
              ("klab_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
        fs::remove_all(dir);
        fs::create_directories(dir);
        input = (dir / "in.png").string();
        io::write_image(input, test::random_image({23, 17, 3, Layout::aos}, 3));
    }
    void TearDown() override { fs::remove_all(dir); }
    void expect_failure(const std::string& arguments, const std::string& fragment) {
        const Result r = klab_cli(arguments);
        EXPECT_NE(r.exit_code, 0) << arguments;
        EXPECT_NE(r.output.find(fragment), std::string::npos) << arguments << "\n" << r.output;
    }
    fs::path dir;
    std::string input;
};

TEST_F(Cli, WrongArgumentsNameThemselvesAndWhatIsAllowed) {
    const std::string out = (dir / "out.png").string();
    expect_failure("apply --backend tpu --filter box:3 " + input + " " + out, "--backend");
    expect_failure("apply --backend tpu --filter box:3 " + input + " " + out, "cpu");
    expect_failure("apply --filter blur:3 " + input + " " + out, "unknown filter 'blur:3'; allowed: box:K");
    expect_failure("apply --filter box:4 " + input + " " + out, "box size 4 is not supported");
    expect_failure("apply --filter box:3 --border clamp " + input + " " + out, "unknown border mode 'clamp'");
    expect_failure("apply --filter box:3 --layout planar " + input + " " + out, "--layout");
    expect_failure("apply --filter box:3 " + (dir / "missing.png").string() + " " + out, "missing.png");
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
    // Sobel makes one channel, which a PGM holds.
    const std::string pgm = (dir / "edges.pgm").string();
    EXPECT_EQ(klab_cli("apply --filter sobel " + rgba + " " + pgm).exit_code, 0);
    EXPECT_TRUE(fs::exists(pgm));
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
    const Result json = klab_cli("info --json");
    EXPECT_EQ(json.exit_code, 0);
    EXPECT_NE(json.output.find("\"devices\""), std::string::npos);
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
    expect_failure("apply --backend gpu --variant nosuch --filter box:3" + args, "conv.constant, conv.global, conv.halo_tiled");
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


// ---------------------------------------------------------------------------------------------
// klab apply over many files (--out-dir DIR INPUT..., --list FILE) and the GPU pipeline options

std::string file_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// The file names in `directory`, sorted (temporary files included: none may be left behind).
std::vector<std::string> names_in(const fs::path& directory) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(directory)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

TEST_F(Cli, BatchOverADirectoryWritesWhatSingleFileRunsWrite) {
    const fs::path in = dir / "in";
    fs::create_directories(in / "sub");
    io::write_image(in / "a.png", test::random_image({31, 19, 3, Layout::aos}, 11));
    io::write_image(in / "b.JPG", test::random_image({16, 16, 3, Layout::aos}, 12));
    io::write_image(in / "c.pgm", test::random_image({9, 40, 1, Layout::aos}, 13));
    io::write_image(in / "sub" / "nested.png", test::random_image({8, 8, 3, Layout::aos}, 14));  // not recursive
    write_text(in / "notes.txt", "not an image");
    const fs::path out = dir / "out";  // created by the batch
    const std::string options = "--backend cpu --filter gaussian:5 --border constant:7 --layout soa ";
    const Result r = klab_cli("apply " + options + "--out-dir " + out.string() + " " + in.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(names_in(out), (std::vector<std::string>{"a.png", "b.JPG", "c.pgm"})) << r.output;
    EXPECT_NE(r.output.find("3 of 3 written"), std::string::npos) << r.output;
    const fs::path single = dir / "single";
    fs::create_directories(single);
    for (const std::string name : {"a.png", "b.JPG", "c.pgm"}) {
        EXPECT_NE(r.output.find((in / name).string() + " -> " + (out / name).string() + ": gaussian:5"), std::string::npos)
            << r.output;
        const Result one = klab_cli("apply " + options + (in / name).string() + " " + (single / name).string());
        ASSERT_EQ(one.exit_code, 0) << one.output;
        EXPECT_EQ(file_bytes(out / name), file_bytes(single / name)) << name;
    }
    // Sobel writes one channel, which --format pgm holds; a JPEG input is fine.
    const fs::path edges = dir / "edges";
    const Result sobel = klab_cli("apply --filter sobel --format pgm --out-dir " + edges.string() + " " + in.string());
    ASSERT_EQ(sobel.exit_code, 0) << sobel.output;
    EXPECT_EQ(names_in(edges), (std::vector<std::string>{"a.pgm", "b.pgm", "c.pgm"}));
    EXPECT_TRUE(same_pixels(io::read_image(edges / "b.pgm"), reference::sobel(io::read_image(in / "b.JPG"), {BorderMode::replicate, 0})));
}

TEST_F(Cli, BatchRefusesADirectoryWithoutImagesBeforeAnyWork) {
    fs::create_directories(dir / "good");
    io::write_image(dir / "good" / "a.png", test::random_image({8, 8, 3, Layout::aos}, 1));
    fs::create_directories(dir / "empty" / "sub.png");  // a directory named like an image is not one
    write_text(dir / "empty" / "readme.txt", "no images here");
    const fs::path out = dir / "out";
    expect_failure("apply --filter box:3 --out-dir " + out.string() + " " + (dir / "good").string() + " " + (dir / "empty").string(),
                   "directory '" + (dir / "empty").string() + "' holds no images");
    EXPECT_FALSE(fs::exists(out)) << "nothing may be created before the inputs are checked";
    expect_failure("apply --filter box:3 --out-dir " + out.string(), "--out-dir without inputs");
    EXPECT_FALSE(fs::exists(out));
}

TEST_F(Cli, BatchReportsBadFilesAndStillWritesTheOthers) {
    const fs::path in = dir / "in";
    fs::create_directories(in);
    io::write_image(in / "a.png", test::random_image({12, 10, 3, Layout::aos}, 1));
    write_text(in / "b.png", "this is not a PNG");                                    // undecodable
    io::write_image(in / "c.ppm", test::random_image({12, 10, 3, Layout::aos}, 2));
    fs::create_symlink(in / "gone.png", in / "d.png");                                // unreadable
    const std::vector<unsigned char> png = [&] {
        const std::string bytes = file_bytes(in / "a.png");
        return std::vector<unsigned char>(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() / 2));
    }();
    std::ofstream(in / "e.png", std::ios::binary).write(reinterpret_cast<const char*>(png.data()), static_cast<long>(png.size()));  // truncated
    // A FIFO named like an image is skipped like a subdirectory: reading it would wait forever.
    ASSERT_EQ(::mkfifo((in / "f.png").c_str(), 0600), 0);
    const fs::path out = dir / "out";
    const Result r = klab_cli("apply --filter box:3 --out-dir " + out.string() + " " + in.string() + " " +
                              (dir / "missing.png").string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    // The good files are written, the bad ones leave nothing (no temporary file either).
    EXPECT_EQ(names_in(out), (std::vector<std::string>{"a.png", "c.ppm"})) << r.output;
    for (const std::string bad : {"b.png", "d.png", "e.png"}) {
        EXPECT_NE(r.output.find("klab apply: " + (in / bad).string() + " failed"), std::string::npos) << bad << "\n" << r.output;
    }
    EXPECT_NE(r.output.find((dir / "missing.png").string() + " failed"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("2 of 6 written; failed: " + (in / "b.png").string() + ", " + (in / "d.png").string() + ", " +
                            (in / "e.png").string() + ", " + (dir / "missing.png").string()),
              std::string::npos)
        << r.output;
    // An image the output format cannot hold fails alone (RGBA into JPEG).
    io::write_image(dir / "rgba.png", test::random_image({9, 9, 4, Layout::aos}, 4));
    const fs::path jpegs = dir / "jpegs";
    const Result j = klab_cli("apply --filter box:3 --format jpg --out-dir " + jpegs.string() + " " + (in / "a.png").string() +
                              " " + (dir / "rgba.png").string());
    EXPECT_NE(j.exit_code, 0) << j.output;
    EXPECT_NE(j.output.find("JPEG cannot store an image with 4 channels"), std::string::npos) << j.output;
    EXPECT_NE(j.output.find("1 of 2 written; failed: " + (dir / "rgba.png").string()), std::string::npos) << j.output;
    EXPECT_EQ(names_in(jpegs), (std::vector<std::string>{"a.jpg"}));
}

TEST_F(Cli, BatchRefusesAnOutputDirectoryItCannotWrite) {
    io::write_image(dir / "a.png", test::random_image({8, 8, 3, Layout::aos}, 1));
    write_text(dir / "plain-file", "x");
    expect_failure("apply --filter box:3 --out-dir " + (dir / "plain-file").string() + " " + input,
                   "--out-dir '" + (dir / "plain-file").string() + "' is not a directory");
    expect_failure("apply --filter box:3 --out-dir " + (dir / "plain-file" / "sub").string() + " " + input,
                   "cannot create --out-dir '" + (dir / "plain-file" / "sub").string() + "'");
    if (geteuid() != 0) {  // root writes into read-only directories
        fs::create_directories(dir / "read-only");
        fs::permissions(dir / "read-only", fs::perms::owner_read | fs::perms::owner_exec);
        expect_failure("apply --filter box:3 --out-dir " + (dir / "read-only").string() + " " + input, "is not writable");
        fs::permissions(dir / "read-only", fs::perms::owner_all);
        EXPECT_TRUE(fs::is_empty(dir / "read-only"));
    }
}

TEST_F(Cli, BatchReadsAListOfInputs) {
    fs::create_directories(dir / "more");
    io::write_image(dir / "more" / "m1.png", test::random_image({8, 8, 1, Layout::aos}, 1));
    io::write_image(dir / "more" / "m2.pgm", test::random_image({8, 8, 1, Layout::aos}, 2));
    io::write_image(dir / "x #1.png", test::random_image({8, 8, 3, Layout::aos}, 3));  // '#' inside a name is kept
    const fs::path list = dir / "inputs.txt";
    write_text(list, "# the inputs\n\n  " + (dir / "x #1.png").string() + "  \n" + (dir / "more").string() + "\r\n# " +
                         input + "\n");
    const fs::path out = dir / "out";
    const Result r = klab_cli("apply --filter sharpen --out-dir " + out.string() + " " + input + " --list " + list.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(names_in(out), (std::vector<std::string>{"in.png", "m1.png", "m2.pgm", "x #1.png"})) << r.output;
    EXPECT_NE(r.output.find("4 of 4 written"), std::string::npos) << r.output;
    expect_failure("apply --filter sharpen --out-dir " + out.string() + " --list " + (dir / "nope.txt").string(),
                   "cannot read --list '" + (dir / "nope.txt").string() + "'");
    write_text(dir / "comments.txt", "# nothing\n\n");
    expect_failure("apply --filter sharpen --out-dir " + out.string() + " --list " + (dir / "comments.txt").string(),
                   "no input images");
    expect_failure("apply --filter sharpen --list " + list.string() + " " + input + " " + (dir / "o.png").string(),
                   "--list " + list.string() + " without --out-dir");
}

TEST_F(Cli, BatchRefusesOutputNameCollisionsUpFront) {
    fs::create_directories(dir / "one");
    fs::create_directories(dir / "two");
    io::write_image(dir / "one" / "a.png", test::random_image({8, 8, 3, Layout::aos}, 1));
    io::write_image(dir / "two" / "a.png", test::random_image({8, 8, 3, Layout::aos}, 2));
    io::write_image(dir / "two" / "a.jpg", test::random_image({8, 8, 3, Layout::aos}, 3));
    const fs::path out = dir / "out";
    const std::string batch = "apply --filter box:3 --out-dir " + out.string() + " ";
    expect_failure(batch + (dir / "one").string() + " " + (dir / "two" / "a.png").string(),
                   "two inputs would write the same output '" + (out / "a.png").string() + "': '" +
                       (dir / "one" / "a.png").string() + "' and '" + (dir / "two" / "a.png").string() + "'");
    // --format png gives a.jpg the name of a.png.
    expect_failure(batch + "--format png " + (dir / "two").string(), "two inputs would write the same output");
    expect_failure(batch + input + " " + (dir / "." / "in.png").string(), "is given twice");
    EXPECT_FALSE(fs::exists(out)) << "refused before anything is created";
    // An output onto its own input.
    expect_failure("apply --filter box:3 --out-dir " + (dir / "one").string() + " " + (dir / "one" / "a.png").string(),
                   "would replace the input itself");
    EXPECT_EQ(names_in(dir / "one"), (std::vector<std::string>{"a.png"}));
    // An input whose name has no image extension needs --format.
    write_text(dir / "data.bin", "x");
    expect_failure(batch + (dir / "data.bin").string(), "--format png|jpg|pgm|ppm");
    EXPECT_FALSE(fs::exists(out));
}

TEST_F(Cli, ApplyPathsAndPipelineOptionsAreChecked) {
    const std::string out = (dir / "out.png").string();
    const std::string args = " " + input + " " + out;
    // IN OUT without --out-dir: exactly two paths.
    expect_failure("apply --filter box:3 " + input, "klab apply takes IN OUT, got 1 path (OUT is missing)");
    expect_failure("apply --filter box:3 " + input + " " + input + " " + out, "got 3 paths; allowed: IN OUT for one image, or --out-dir");
    expect_failure("apply --filter box:3 " + dir.string() + " " + out, "is a directory; allowed: an image file, or --out-dir");
    expect_failure("apply --filter box:3 --format png" + args, "--format png without --out-dir");
    expect_failure("apply --filter box:3 --format tiff --out-dir " + dir.string() + " " + input, "--format");
    // The pipeline's options: ranges, --sync against --strips and --in-flight, GPU only. All are
    // checked before the device, so they answer the same with or without a GPU.
    expect_failure("apply --backend gpu --sync --strips 4 --filter box:3" + args, "--sync with --strips 4");
    expect_failure("apply --backend gpu --sync --in-flight 2 --filter box:3" + args, "--sync with --in-flight 2");
    for (const char* bad : {"--strips 0", "--strips 65537", "--strips x", "--in-flight 0", "--in-flight 17"}) {
        const std::string option = std::string(bad).substr(0, std::string(bad).find(' '));
        expect_failure(fmt::format("apply --backend gpu {} --filter box:3{}", bad, args), option + ":");
    }
    expect_failure("apply --strips 4 --filter box:3" + args, "--strips with --backend cpu");
    expect_failure("apply --in-flight 2 --filter box:3" + args, "--in-flight with --backend cpu");
    expect_failure("apply --sync --filter box:3" + args, "--sync with --backend cpu");
    EXPECT_FALSE(fs::exists(out));
    if (!cuda_device_available()) {
        // Without a device a GPU batch stops before it creates anything.
        expect_failure("apply --backend gpu --filter box:3 --out-dir " + (dir / "o").string() + " " + input, "no CUDA device found");
        EXPECT_FALSE(fs::exists(dir / "o"));
    }
}

}  // namespace
}  // namespace klab
