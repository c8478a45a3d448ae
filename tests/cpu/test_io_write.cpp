// Image I/O writing: missing and unusable folders, images a format cannot store, replacing a file
// atomically with the umask's permissions. No failure may leave an output file (or a temporary
// file) behind.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/cpu/io_test_util.hpp"

namespace klab {
namespace {

using namespace io_fixtures;

// ---- writing -------------------------------------------------------------------------------

using IoWrite = IoTempDir;

TEST_F(IoWrite, IntoADirectoryThatDoesNotExist) {
    const fs::path missing_dir = dir_ / "no-such-dir";
    const fs::path output = missing_dir / "out.png";
    const std::string message = error_message([&] { io::write_image(output, test::random_image({4, 4, 3}, 1)); });
    expect_contains(message, fmt::format("cannot write '{}': directory '{}' does not exist; allowed: a path in an "
                                         "existing, writable directory",
                                         output.string(), missing_dir.string()));
    EXPECT_FALSE(fs::exists(missing_dir));
    EXPECT_TRUE(entries(dir_).empty()) << "a temporary file was left";
}

TEST_F(IoWrite, WhatTheFileSystemRefusesKeepsItsErrno) {
    const ImageU8 image = test::random_image({4, 4, 3}, 1);
    EXPECT_EQ(file_system_errno([&] { io::write_image(dir_ / "no-such-dir" / "out.png", image); }), ENOENT);
    fs::create_directory(dir_ / "taken.png");
    EXPECT_EQ(file_system_errno([&] { io::write_image(dir_ / "taken.png", image); }), EISDIR);
    write_bytes(dir_ / "file", text_bytes("x"));
    EXPECT_EQ(file_system_errno([&] { io::write_image(dir_ / "file" / "out.png", image); }), ENOTDIR);
    const fs::path too_long = dir_ / (std::string(300, 'n') + ".png");
    EXPECT_EQ(file_system_errno([&] { io::check_writable(too_long, 3); }), ENAMETOOLONG);
}

TEST_F(IoWrite, UnderAPathWhoseParentIsAFile) {
    write_bytes(dir_ / "file", text_bytes("x"));
    const fs::path output = dir_ / "file" / "out.png";
    expect_contains(error_message([&] { io::write_image(output, test::random_image({4, 4, 3}, 1)); }),
                    fmt::format("cannot write '{}': ", output.string()));
    EXPECT_EQ(entries(dir_), std::vector<std::string>{"file"});
}

// Writes an unstorable image to `file_name`, first where no file exists, then over an existing
// file whose bytes must survive untouched.
void expect_write_refused(const fs::path& dir, const std::string& file_name, const ImageU8& image,
                          const io::WriteOptions& options, const std::string& fragment) {
    const fs::path output = dir / file_name;
    std::string message = error_message([&] { io::write_image(output, image, options); });
    expect_contains(message, output.string());
    expect_contains(message, fragment);
    EXPECT_FALSE(fs::exists(output));
    EXPECT_TRUE(entries(dir).empty());

    const Bytes original = text_bytes("previous contents, not an image");
    write_bytes(output, original);
    message = error_message([&] { io::write_image(output, image, options); });
    expect_contains(message, fragment);
    EXPECT_EQ(read_bytes(output), original);
    EXPECT_EQ(entries(dir), std::vector<std::string>{file_name});
    fs::remove(output);
}

TEST_F(IoWrite, FourChannelsToJpegIsRefused) {
    const ImageU8 rgba = test::random_image({5, 3, 4}, 2);
    for (const char* name : {"out.jpg", "out.JPEG"}) {
        expect_write_refused(
            dir_, name, rgba, {},
            "JPEG cannot store an image with 4 channels (RGBA); allowed: 1 (gray) or 3 (RGB) channels");
    }
}

TEST_F(IoWrite, FourChannelsToPnmIsRefused) {
    const ImageU8 rgba = test::random_image({5, 3, 4, Layout::soa}, 2);
    for (const char* name : {"out.ppm", "out.pnm"}) {  // out.pgm: ColourToAPgmName...
        expect_write_refused(dir_, name, rgba, {},
                             "PNM cannot store an image with 4 channels (RGBA); allowed: 1 (gray, written as P5) or 3 "
                             "(RGB, written as P6) channels");
    }
}

TEST_F(IoWrite, ColourToAPgmNameIsRefusedAndGrayToAPpmIsWritten) {
    // PGM readers refuse P6: a colour image goes to .ppm or .pnm; PPM readers take a P5.
    for (const char* name : {"out.pgm", "out.PGM"}) {
        expect_write_refused(dir_, name, test::random_image({5, 3, 3}, 2), {},
                             "a .pgm file holds a gray image, and this one has 3 channels (RGB); allowed: a .ppm or "
                             ".pnm name (written as P6) or .png for RGB; .pgm for gray");
    }
    expect_write_refused(dir_, "out.pgm", test::random_image({5, 3, 4}, 2), {},
                         "a .pgm file holds a gray image, and this one has 4 channels (RGBA); allowed: a .png name for "
                         "RGBA; .pgm for gray");
    test::expect_error([&] { io::check_writable(dir_ / "out.pgm", 3); }, "a .pgm file holds a gray image");
    EXPECT_TRUE(entries(dir_).empty());
    const ImageU8 gray = test::random_image({5, 3, 1}, 2);
    for (const char* name : {"gray.pgm", "gray.ppm", "gray.pnm"}) {
        io::check_writable(dir_ / name, 1);
        io::write_image(dir_ / name, gray);
        EXPECT_EQ(read_bytes(dir_ / name).at(1), '5') << name;
        EXPECT_TRUE(same_pixels(io::read_image(dir_ / name), gray)) << name;
    }
    io::write_image(dir_ / "rgb.pnm", test::random_image({5, 3, 3}, 2));
    EXPECT_EQ(read_bytes(dir_ / "rgb.pnm").at(1), '6');
}

TEST_F(IoWrite, JpegQualityOutOfRangeIsRefused) {
    const ImageU8 gray = test::random_image({5, 3, 1}, 2);
    io::WriteOptions options;
    options.jpeg_quality = 0;
    expect_write_refused(dir_, "q.jpg", gray, options, "JPEG quality 0 is out of range; allowed: 1 to 100");
    options.jpeg_quality = 101;
    expect_write_refused(dir_, "q.jpg", gray, options, "JPEG quality 101 is out of range; allowed: 1 to 100");
    options.jpeg_quality = 1;  // the ends of the range work
    io::write_image(dir_ / "q1.jpg", gray, options);
    EXPECT_EQ(io::read_image(dir_ / "q1.jpg").shape(), gray.shape());
}

TEST_F(IoWrite, UnknownExtensionAndEmptyImageAreRefused) {
    expect_write_refused(dir_, "out.gif", test::random_image({2, 2, 3}, 2), {},
                         "has the unknown image file extension '.gif'; allowed: .png, .jpg, .jpeg, .pgm, .ppm, .pnm");
    expect_write_refused(dir_, "out.png", ImageU8{}, {}, "the image to write holds no pixels");
}

TEST_F(IoWrite, ReplacesAnExistingFileAndLeavesNoTemporaryFile) {
    const fs::path output = dir_ / "out.png";
    write_bytes(output, text_bytes("old"));
    const ImageU8 image = test::random_image({6, 5, 3}, 3);
    io::write_image(output, image);
    EXPECT_TRUE(same_pixels(io::read_image(output), image));
    EXPECT_EQ(entries(dir_), std::vector<std::string>{"out.png"});
}

TEST_F(IoWrite, NewFilesGetTheUmaskPermissions) {
    const mode_t mask = ::umask(0);  // read the umask: set it and put it back
    ::umask(mask);
    io::write_file_atomically(dir_ / "plain.bin", text_bytes("abc"));
    EXPECT_EQ(read_bytes(dir_ / "plain.bin"), text_bytes("abc"));
    EXPECT_EQ(fs::status(dir_ / "plain.bin").permissions(), static_cast<fs::perms>(0666 & ~mask));
}

TEST_F(IoWrite, OntoADirectoryFailsBeforeWritingAnything) {
    fs::create_directory(dir_ / "taken.png");
    const fs::path output = dir_ / "taken.png";
    expect_contains(error_message([&] { io::write_image(output, test::random_image({2, 2, 1}, 4)); }),
                    fmt::format("cannot write '{}': it is an existing directory; allowed: a file path", output.string()));
    EXPECT_EQ(entries(dir_), std::vector<std::string>{"taken.png"});
    EXPECT_TRUE(fs::is_directory(output));
}

TEST_F(IoWrite, ADirectoryWithoutAnImageExtensionIsNamedAsADirectory) {
    // The place is checked before the name's extension: "no file extension" would mislead here.
    fs::create_directory(dir_ / "folder");
    const fs::path output = dir_ / "folder";
    const std::string expected = fmt::format("cannot write '{}': it is an existing directory", output.string());
    expect_contains(error_message([&] { io::check_writable(output, 3); }), expected);
    expect_contains(error_message([&] { io::write_image(output, test::random_image({2, 2, 3}, 4)); }), expected);
}

TEST_F(IoWrite, ANameNearTheFileSystemsLimitIsWrittenALongerOneRefusedBeforeAnyWork) {
    // The temporary file's name adds 12 bytes to what it keeps of the target's, so it keeps less
    // where the target's is long.
    const auto longest = static_cast<std::size_t>(::pathconf(dir_.c_str(), _PC_NAME_MAX));  // 255 on Linux's
    ASSERT_GT(longest, 16u);
    const std::string near_limit = std::string(longest - 4, 'n') + ".png";
    const ImageU8 image = test::random_image({3, 2, 3}, 5);
    io::check_writable(dir_ / near_limit, 3);
    io::write_image(dir_ / near_limit, image);
    EXPECT_TRUE(same_pixels(io::read_image(dir_ / near_limit), image));
    EXPECT_EQ(entries(dir_), std::vector<std::string>{near_limit});
    const std::string too_long = std::string(longest - 3, 'n') + ".png";
    const std::string expected = fmt::format("cannot write '{}': its file name is {} bytes long; allowed: a file name of at "
                                             "most {} bytes (the file system's limit)",
                                             (dir_ / too_long).string(), longest + 1, longest);
    expect_contains(error_message([&] { io::check_writable(dir_ / too_long, 3); }), expected);
    expect_contains(error_message([&] { io::write_image(dir_ / too_long, image); }), expected);
    EXPECT_EQ(entries(dir_), std::vector<std::string>{near_limit});
}

TEST_F(IoWrite, APathWithoutAFileName) {
    expect_contains(error_message([&] { io::write_file_atomically(dir_ / "", text_bytes("abc")); }),
                    "the path does not end in a file name");
    EXPECT_TRUE(entries(dir_).empty());
}

}  // namespace
}  // namespace klab
