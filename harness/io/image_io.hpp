#pragma once
// Reading and writing image files: PNG (libpng), JPEG (libjpeg / libjpeg-turbo), PNM (P5, P6 read and
// written; the ASCII P2, P3 read).
//
// Reading picks the decoder from the file's first bytes, not its name. Every image comes back as
// 8-bit AoS with 1 (gray), 3 (RGB) or 4 (RGBA) channels. A file that is malformed, truncated, too
// large (kMaxImagePixels, harness/image.hpp) or of an unsupported kind (16-bit samples, CMYK JPEG, ...) is refused with
// a klab::Error that names the file and the problem.
//
// Writing picks the encoder from the extension (.png, .jpg/.jpeg, .pgm/.ppm/.pnm), encodes into
// memory and writes the bytes to a temporary file beside the target that is renamed into place:
// a failure never leaves a half-written or truncated output behind.
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "harness/image.hpp"

namespace klab::io {

enum class ImageFormat { png, jpeg, pnm };

struct WriteOptions {
    int jpeg_quality = 95;  // 1..100
};

// Throws unless `path` ends in .png, .jpg, .jpeg, .pgm, .ppm or .pnm (any case).
ImageFormat format_from_extension(const std::filesystem::path& path);

// True for a .pgm name (any case): a graymap, which holds gray only. PGM readers refuse the P6 an
// RGB image is written as, so write_image refuses colour there; .ppm and .pnm take both (PPM
// readers take a P5 too).
bool gray_only_extension(const std::filesystem::path& path);

ImageU8 read_image(const std::filesystem::path& path);
// `image` may have any layout and pitch; it is written interleaved. PNG takes 1/3/4 channels,
// JPEG and PNM 1/3 (P5 for gray, P6 for RGB; a .pgm name takes gray only, .ppm and .pnm both).
void write_image(const std::filesystem::path& path, const ImageU8& image, const WriteOptions& options = {});

// The codecs on memory buffers; `name` appears in error messages (usually the file name). A
// `max_pixels` below kMaxImagePixels refuses larger images before their pixels are allocated (the
// fuzz targets, fuzz/README.md, keep within their memory limit so).
ImageU8 decode_image(const std::vector<std::uint8_t>& bytes, const std::string& name,
                     std::int64_t max_pixels = kMaxImagePixels);
std::vector<std::uint8_t> encode_image(const ImageU8& image, ImageFormat format, const std::string& name,
                                       const WriteOptions& options = {});

// Throws the error write_image would throw for an image of `channels` channels at `path` (first
// the place: a path that is a directory or does not end in a file name, a missing or read-only
// directory, a file name longer than the file system takes; then an unknown extension, a format
// that cannot hold that many channels) without writing anything, so that a long computation can
// fail before it starts.
void check_writable(const std::filesystem::path& path, int channels);

// Throws the error write_file_atomically would throw for `path`'s place (a path that is a directory
// or does not end in a file name, a missing or read-only directory, a file name too long), without
// writing anything: check_writable without the image's checks.
void check_file_writable(const std::filesystem::path& path);

// Throws unless `path`'s file name is within the longest its directory's file system takes (for a
// directory not made yet, its nearest existing ancestor's). check_writable includes this check.
void check_file_name_length(const std::filesystem::path& path);

// The same file however it was named (a/./b.png, ../x/b.png, links in the folders); the path
// itself, made absolute, where that fails.
std::filesystem::path file_identity(const std::filesystem::path& path);

// The directory entry a write of `output` replaces: its folder's identity and its own name, not
// followed (the write renames a new file onto that entry, replacing a link rather than its target).
std::filesystem::path output_location(const std::filesystem::path& output);

// True where writing `output` would replace `input`: the same path however it is named (./, ..,
// links in the folders), or `input` a link to `output`'s path. Not for a hard link, nor an `output`
// that is a link to `input`: the write renames a new file onto `output`'s own directory entry and
// leaves the input's file as it was. klab apply, compare --learn-noise and report refuse it.
bool output_replaces_input(const std::filesystem::path& input, const std::filesystem::path& output);

// Writes `bytes` to a temporary file in the same directory as `path`, then renames it onto
// `path`. On any failure the temporary file is removed and klab::Error is thrown.
void write_file_atomically(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes);

// The most klab reads of one file: an image file (read_image; its pixels are bounded apart, by
// kMaxImagePixels), and a text file (a mask, a --list, a JSON file of results). A larger file, or a
// pipe or device that keeps giving bytes (/dev/zero), is refused before memory runs out.
inline constexpr std::uintmax_t kMaxImageFileBytes = std::uintmax_t{4} << 30;
inline constexpr std::uintmax_t kMaxStreamedImageBytes = std::uintmax_t{1} << 30;  // an image from a pipe or device
inline constexpr std::uintmax_t kMaxTextFileBytes = std::uintmax_t{256} << 20;

// All of `in`, a stream its caller opened from `path`, as text. Refused with a klab::Error that
// names the file as `name` and ends in `allowed`: a directory, a file (or a pipe or device) that
// holds more than `max_bytes`, a read error.
std::string read_all(std::istream& in, const std::filesystem::path& path, std::uintmax_t max_bytes, const std::string& name,
                     const std::string& allowed);

}  // namespace klab::io
