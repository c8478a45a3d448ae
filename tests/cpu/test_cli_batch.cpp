// The klab executable end to end on batches: klab apply over many files (--out-dir DIR INPUT...,
// --list FILE) writes what single-file runs write, reports bad files and still writes the others,
// and refuses what it cannot do before any work; and the GPU pipeline options are checked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/device_info.hpp"
#include "harness/io/image_io.hpp"
#include "harness/reference/reference.hpp"
#include "tests/cpu/cli_test_fixture.hpp"

namespace klab {
namespace {

using namespace cli_fixtures;

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
    expect_failure(batch + (dir / "data.bin").string(), "--format png|jpg|jpeg|pgm|ppm|pnm");
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

TEST_F(Cli, ApplyWritesJpegAtTheQualityAsked) {
    // A larger image than the fixture's, so that the qualities give files of different sizes.
    const fs::path photo = dir / "photo.png";
    io::write_image(photo, test::random_image({96, 64, 3, Layout::aos}, 21));
    const auto apply_to = [&](const std::string& options, const fs::path& out) {
        const Result r = klab_cli("apply --filter box:3 " + options + photo.string() + " " + out.string());
        EXPECT_EQ(r.exit_code, 0) << r.output;
    };
    apply_to("", dir / "default.jpg");
    apply_to("--jpeg-quality 95 ", dir / "q95.jpg");
    apply_to("--jpeg-quality 20 ", dir / "q20.jpg");
    EXPECT_EQ(file_bytes(dir / "default.jpg"), file_bytes(dir / "q95.jpg"));  // 95 is the default
    EXPECT_LT(file_bytes(dir / "q20.jpg").size(), file_bytes(dir / "q95.jpg").size());
    // A batch encodes every output as one file's run does.
    const fs::path out = dir / "out";
    const Result batch = klab_cli("apply --filter box:3 --jpeg-quality 20 --format jpg --out-dir " + out.string() + " " +
                                  photo.string());
    ASSERT_EQ(batch.exit_code, 0) << batch.output;
    EXPECT_EQ(file_bytes(out / "photo.jpg"), file_bytes(dir / "q20.jpg"));
    // Out of range, or where no output is a JPEG: refused before any work, nothing written.
    for (const char* bad : {"0", "101", "x"}) expect_failure(fmt::format("apply --filter box:3 --jpeg-quality {} {} {}", bad, input,
                                                                          (dir / "bad.jpg").string()),
                                                              "--jpeg-quality");
    expect_failure("apply --filter box:3 --jpeg-quality 80 " + input + " " + (dir / "bad.png").string(),
                   "--jpeg-quality 80: OUT '" + (dir / "bad.png").string() + "' is not a JPEG, so it would change nothing");
    // OUT's own errors come first: they say more.
    expect_failure("apply --filter box:3 --jpeg-quality 80 " + input + " " + (dir / "bad.bmp").string(),
                   "has the unknown image file extension '.bmp'");
    expect_failure("apply --filter box:3 --jpeg-quality 80 " + input + " " + dir.string(), "it is an existing directory");
    expect_failure("apply --filter box:3 --jpeg-quality 80 --out-dir " + (dir / "pngs").string() + " " + input,
                   "--jpeg-quality 80: none of the batch's 1 output is a JPEG");
    EXPECT_FALSE(fs::exists(dir / "bad.jpg"));
    EXPECT_FALSE(fs::exists(dir / "bad.png"));
    EXPECT_FALSE(fs::exists(dir / "pngs"));
}

TEST_F(Cli, ApplyNeverReplacesItsInput) {
    const std::string original = file_bytes(input);
    const fs::path link = dir / "link.png";
    fs::create_symlink(input, link);
    const std::string same_file = "is IN '";
    // The same path however it is written, and IN a link to OUT's path.
    for (const std::string& in : {input, (fs::path(input).parent_path() / "." / "in.png").string(), link.string()}) {
        expect_failure("apply --filter box:3 " + in + " " + input, same_file);
    }
    expect_failure("apply --filter box:3 " + input + " " + (fs::path(input).parent_path() / "." / "in.png").string(), same_file);
    EXPECT_TRUE(file_bytes(input) == original);
    EXPECT_TRUE(fs::is_symlink(link));
    // OUT a hard link to IN, or a symbolic link to it: the write replaces OUT's own entry, IN's file
    // stays as it was. A batch agrees.
    const fs::path hard = dir / "hard.png";
    fs::create_hard_link(input, hard);
    for (const fs::path& out : {hard, link}) {
        const Result r = klab_cli("apply --filter box:3 " + input + " " + out.string());
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_FALSE(fs::is_symlink(out));
        EXPECT_TRUE(file_bytes(out) != original);
        EXPECT_TRUE(file_bytes(input) == original) << out;
    }
    fs::create_directories(dir / "src");
    fs::copy_file(input, dir / "src" / "a.png");
    fs::create_directories(dir / "dst");
    fs::create_hard_link(dir / "src" / "a.png", dir / "dst" / "a.png");
    const Result batch = klab_cli("apply --filter box:3 --out-dir " + (dir / "dst").string() + " " + (dir / "src" / "a.png").string());
    ASSERT_EQ(batch.exit_code, 0) << batch.output;
    EXPECT_TRUE(file_bytes(dir / "src" / "a.png") == original);
    // A batch refuses the same cases as one file: its input through a link to its folder.
    fs::create_directory_symlink(dir / "src", dir / "src-link");
    expect_failure("apply --filter box:3 --out-dir " + (dir / "src-link").string() + " " + (dir / "src" / "a.png").string(),
                   "would replace the input itself");
}

TEST_F(Cli, ApplyRefusesOptionsThatWouldDoNothingAndNamesAMissingInput) {
    const std::string out = (dir / "out.png").string();
    expect_failure("apply --filter box:3 --out-dir '' " + input, "--out-dir: an empty path names nothing");
    expect_failure("apply --filter box:3 --list '' --out-dir " + (dir / "o").string() + " " + input,
                   "--list: an empty path names nothing");
    expect_failure("apply --filter integral --border wrap " + input + " " + out,
                   "--border wrap with --filter integral: an integral image's sums read no pixel outside the image");
    // A missing input whose name has no image extension: its absence is named, not the extension.
    expect_failure("apply --filter box:3 --out-dir " + (dir / "o").string() + " " + (dir / "no-such-file").string(),
                   "input '" + (dir / "no-such-file").string() + "' does not exist");
    // An output name longer than the file system takes (--format jpeg adds a byte): refused before
    // --out-dir is made, not on its turn.
    const auto longest = static_cast<std::size_t>(::pathconf(dir.c_str(), _PC_NAME_MAX));
    const fs::path long_input = dir / (std::string(longest - 4, 'n') + ".png");
    fs::copy_file(input, long_input);
    expect_failure("apply --filter box:3 --format jpeg --out-dir " + (dir / "o").string() + " " + input + " " + long_input.string(),
                   fmt::format("bytes long; allowed: a file name of at most {} bytes", longest));
    EXPECT_FALSE(fs::exists(out));
    EXPECT_FALSE(fs::exists(dir / "o"));
}

TEST_F(Cli, BatchTakesPnmFilesAndWritesEachFormatAsked) {
    const fs::path in = dir / "pnm";
    fs::create_directories(in);
    io::write_image(in / "a.pnm", test::random_image({7, 5, 3, Layout::aos}, 31));
    for (const std::string format : {"pnm", "jpeg"}) {
        const fs::path out = dir / ("out-" + format);
        const Result r = klab_cli("apply --filter box:3 --format " + format + " --out-dir " + out.string() + " " + in.string());
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_EQ(names_in(out), std::vector<std::string>{"a." + format}) << r.output;
        EXPECT_EQ(io::read_image(out / ("a." + format)).width(), 7);
    }
}

}  // namespace
}  // namespace klab
