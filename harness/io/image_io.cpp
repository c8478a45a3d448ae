// Format dispatch, file reading and the atomic file write behind image_io.hpp. The codecs
// themselves live in png_codec.cpp, jpeg_codec.cpp and pnm_codec.cpp.
#include "harness/io/image_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <istream>
#include <optional>
#include <random>
#include <system_error>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/interrupt.hpp"
#include "harness/io/image_codec.hpp"

namespace klab::io {
namespace fs = std::filesystem;

namespace {

constexpr const char* kReadableFormats = "PNG, JPEG, or PNM (P2, P3, P5, P6)";
constexpr const char* kWritableExtensions = ".png, .jpg, .jpeg, .pgm, .ppm, .pnm (any case)";

std::string os_reason(int error_number) { return std::error_code(error_number, std::generic_category()).message(); }

// Which codec the first bytes belong to; throws for an empty or unrecognised buffer.
ImageFormat sniff_format(const std::vector<std::uint8_t>& bytes, const std::string& name) {
    if (bytes.empty()) throw Error(fmt::format("{}: the file is empty", name), kReadableFormats);
    static const std::uint8_t png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    if (bytes.size() >= 8 && std::memcmp(bytes.data(), png_signature, 8) == 0) return ImageFormat::png;
    if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) return ImageFormat::jpeg;
    if (bytes.size() >= 2 && bytes[0] == 'P' &&
        (bytes[1] == '2' || bytes[1] == '3' || bytes[1] == '5' || bytes[1] == '6')) {
        return ImageFormat::pnm;
    }
    // Show the first bytes: they usually identify the format (e.g. "47 49 46" is GIF).
    std::string first;
    for (std::size_t i = 0; i < bytes.size() && i < 8; ++i) first += fmt::format("{}{:02X}", i ? " " : "", bytes[i]);
    throw Error(fmt::format("{}: unknown image format (first bytes {})", name, first), kReadableFormats);
}

// Closes a file descriptor on every exit path.
struct ReadOnlyFile {
    int fd;
    explicit ReadOnlyFile(int fd_) : fd(fd_) {}
    ReadOnlyFile(const ReadOnlyFile&) = delete;
    ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;
    ~ReadOnlyFile() { ::close(fd); }
};

// "4 GiB", "256 MiB": a read limit as a message gives it.
std::string limit_text(std::uintmax_t bytes) {
    return bytes >= (std::uintmax_t{1} << 30) ? fmt::format("{} GiB", bytes >> 30) : fmt::format("{} MiB", bytes >> 20);
}

// `size` 0: a pipe or device, read that far.
Error too_large(const std::string& name, std::uintmax_t max_bytes, const std::string& allowed, std::uintmax_t size = 0) {
    const std::string held = size ? fmt::format("is {} bytes, more than", size) : "holds more than";
    return Error(fmt::format("{} {} the {} klab reads of such a file", name, held, limit_text(max_bytes)), allowed);
}

std::vector<std::uint8_t> read_file(const fs::path& path) {
    const std::string name = fmt::format("'{}'", printable(path.string()));
    const std::string allowed = fmt::format("an existing, readable image file of at most {} ({} from a pipe or device)",
                                            limit_text(kMaxImageFileBytes), limit_text(kMaxStreamedImageBytes));
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int error_number = errno;  // saved before anything else can change it
        throw FileSystemError(error_number,
                              fmt::format("cannot open {} for reading: {}", name, os_reason(error_number)), allowed);
    }
    const ReadOnlyFile file{fd};
    std::vector<std::uint8_t> bytes;
    struct stat info {};
    std::uintmax_t limit = kMaxStreamedImageBytes;  // a pipe or device is held in memory as it comes
    if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) {
        const auto size = static_cast<std::uintmax_t>(info.st_size);
        limit = kMaxImageFileBytes;
        if (size > limit) throw too_large(name, limit, allowed, size);
        bytes.reserve(static_cast<std::size_t>(size));
    }
    // Read to the end rather than trusting the size: the file may change, or be a pipe.
    std::uint8_t chunk[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            const int error_number = errno;
            throw FileSystemError(error_number, fmt::format("cannot read {}: {}", name, os_reason(error_number)),
                                  allowed);
        }
        if (bytes.size() + static_cast<std::size_t>(n) > limit) throw too_large(name, limit, allowed);
        bytes.insert(bytes.end(), chunk, chunk + n);
    }
    return bytes;
}

// The longest file name `dir`'s file system takes, in bytes (NAME_MAX, 255 on Linux's); for a
// directory not made yet, that of its nearest existing ancestor.
std::size_t longest_file_name(fs::path dir) {
    std::error_code ec;
    dir = fs::absolute(dir, ec).lexically_normal();
    while (!fs::exists(dir, ec) && dir.has_relative_path()) dir = dir.parent_path();
    const long longest = ::pathconf(dir.c_str(), _PC_NAME_MAX);
    return longest > 0 ? static_cast<std::size_t>(longest) : 255;
}

// What a temporary file's name adds to the part of the target's name it keeps: "." and ".xxxxxx.tmp".
constexpr std::size_t kTempNameExtra = 12;

// A temporary file beside the target; removed on destruction unless release() was called after a
// successful rename, and by the signal handler if a signal ends the process meanwhile.
class TempFile {
public:
    TempFile(const fs::path& dir, const std::string& target_name, const fs::path& target) {
        std::random_device random;
        std::uniform_int_distribution<std::uint32_t> six_hex_digits(0, 0xFFFFFF);
        // A target name within a byte or a dozen of the longest allowed still gets a temporary file:
        // its name keeps as much of the target's as fits.
        const std::size_t longest = longest_file_name(dir);
        const std::size_t kept = longest - std::min(longest, kTempNameExtra);
        const std::string stem = target_name.substr(0, kept);
        int error_number = 0;
        for (int attempt = 0; attempt < 100; ++attempt) {
            path_ = dir / fmt::format(".{}.{:06x}.tmp", stem, six_hex_digits(random));
            registration_.emplace(path_.string());  // before the file exists: no moment without it
            // O_EXCL: never reuse someone else's file. Mode 0666 lets the umask apply, as for any new
            // file (mkstemp would create it 0600, and the rename would keep that).
            fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd_ >= 0) return;
            error_number = errno;
            registration_.reset();  // not our file
            if (error_number != EEXIST) break;
        }
        throw FileSystemError(error_number,
                              fmt::format("cannot write '{}': cannot create a temporary file in '{}': {}",
                                          target.string(), dir.string(), os_reason(error_number)),
                              "a path in an existing, writable directory");
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    ~TempFile() {
        if (fd_ >= 0) ::close(fd_);
        if (!path_.empty()) ::unlink(path_.c_str());
    }

    int fd() const { return fd_; }
    const fs::path& path() const { return path_; }
    // Closes the descriptor; returns 0 or the errno of a failed close (which can report a failed
    // write-back, so it must be checked).
    int close() {
        const int result = ::close(fd_);
        fd_ = -1;
        return result == 0 ? 0 : errno;
    }
    void release() {
        path_.clear();
        registration_.reset();
    }

private:
    fs::path path_;
    int fd_ = -1;
    std::optional<TempFileRegistration> registration_;
};

std::string lower_extension(const fs::path& path) {
    std::string extension = path.extension().string();
    for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return extension;
}

void check_pgm_is_gray(const fs::path& path, int channels) {
    if (channels != 1 && gray_only_extension(path)) {
        throw Error(fmt::format("cannot write '{}': a .pgm file holds a gray image, and this one has {} channels ({})",
                                path.string(), channels, detail::channels_name(channels)),
                    channels == 3 ? "a .ppm or .pnm name (written as P6) or .png for RGB; .pgm for gray"
                                  : "a .png name for RGBA; .pgm for gray");
    }
}

}  // namespace

bool gray_only_extension(const fs::path& path) { return lower_extension(path) == ".pgm"; }

ImageFormat format_from_extension(const fs::path& path) {
    const std::string extension = lower_extension(path);
    if (extension == ".png") return ImageFormat::png;
    if (extension == ".jpg" || extension == ".jpeg") return ImageFormat::jpeg;
    if (extension == ".pgm" || extension == ".ppm" || extension == ".pnm") return ImageFormat::pnm;
    if (extension.empty()) {
        throw Error(fmt::format("'{}' has no file extension to choose the image format by", path.string()),
                    kWritableExtensions);
    }
    throw Error(fmt::format("'{}' has the unknown image file extension '{}'", path.string(), path.extension().string()),
                kWritableExtensions);
}

ImageU8 decode_image(const std::vector<std::uint8_t>& bytes, const std::string& name, std::int64_t max_pixels) {
    switch (sniff_format(bytes, name)) {
        case ImageFormat::png: return detail::decode_png(bytes, name, max_pixels);
        case ImageFormat::jpeg: return detail::decode_jpeg(bytes, name, max_pixels);
        case ImageFormat::pnm: return detail::decode_pnm(bytes, name, max_pixels);
    }
    throw Error(fmt::format("{}: internal error: unhandled image format", name));
}

std::vector<std::uint8_t> encode_image(const ImageU8& image, ImageFormat format, const std::string& name,
                                       const WriteOptions& options) {
    detail::check_image_to_encode(image, name);
    switch (format) {
        case ImageFormat::png: return detail::encode_png(image, name);
        case ImageFormat::jpeg: return detail::encode_jpeg(image, name, options.jpeg_quality);
        case ImageFormat::pnm: return detail::encode_pnm(image, name);
    }
    throw Error(fmt::format("{}: internal error: unhandled image format", name));
}

std::string read_all(std::istream& in, const fs::path& path, std::uintmax_t max_bytes, const std::string& name,
                     const std::string& allowed) {
    // A directory opens as a stream on Linux and fails at its first read: say what it is instead.
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (!ec && fs::is_directory(status)) throw Error(fmt::format("{} is a directory", name), allowed);
    if (!ec && fs::is_regular_file(status)) {
        const std::uintmax_t size = fs::file_size(path, ec);
        if (!ec && size > max_bytes) throw too_large(name, max_bytes, allowed, size);
    }
    std::string text;
    char chunk[1 << 16];
    while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
        const auto n = static_cast<std::size_t>(in.gcount());
        if (text.size() + n > max_bytes) throw too_large(name, max_bytes, allowed);
        text.append(chunk, n);
    }
    if (in.bad()) throw Error(fmt::format("cannot read {}: a read error", name), allowed);
    return text;
}

ImageU8 read_image(const fs::path& path) { return decode_image(read_file(path), printable(path.string())); }

namespace {

// Throws unless `path` names a file in an existing, writable directory; returns that directory.
fs::path check_target_directory(const fs::path& path) {
    const std::string target_name = path.filename().string();
    if (target_name.empty() || target_name == "." || target_name == "..") {
        throw Error(fmt::format("cannot write '{}': the path does not end in a file name", path.string()),
                    "a path that ends in a file name, e.g. out/result.png");
    }
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        // Found now, not at the final rename (after the whole filtering).
        throw FileSystemError(EISDIR, fmt::format("cannot write '{}': it is an existing directory", path.string()),
                              "a file path, not a directory");
    }
    const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
    const fs::file_status dir_status = fs::status(dir, ec);
    if (dir_status.type() == fs::file_type::not_found) {
        throw FileSystemError(ENOENT,
                              fmt::format("cannot write '{}': directory '{}' does not exist", path.string(),
                                          dir.string()),
                              "a path in an existing, writable directory");
    }
    if (ec) {
        throw FileSystemError(ec.value(),
                              fmt::format("cannot write '{}': cannot access directory '{}': {}", path.string(),
                                          dir.string(), ec.message()),
                              "a path in an existing, writable directory");
    }
    if (!fs::is_directory(dir_status)) {
        throw FileSystemError(ENOTDIR,
                              fmt::format("cannot write '{}': '{}' is not a directory", path.string(), dir.string()),
                              "a path in an existing, writable directory");
    }
    if (::access(dir.c_str(), W_OK) != 0) {
        const int error_number = errno;
        throw FileSystemError(error_number,
                              fmt::format("cannot write '{}': directory '{}' is not writable: {}", path.string(),
                                          dir.string(), os_reason(error_number)),
                              "a path in an existing, writable directory");
    }
    check_file_name_length(path);
    return dir;
}

// write_file_atomically into `dir`, the directory check_target_directory(path) returned.
void write_atomically_into(const fs::path& path, const fs::path& dir, const std::vector<std::uint8_t>& bytes) {
    TempFile temp(dir, path.filename().string(), path);
    const auto fail = [&](const std::string& what, int error_number) {
        // `temp` removes the temporary file as the exception leaves this function.
        return FileSystemError(error_number, fmt::format("cannot write '{}': {} '{}' failed: {}", path.string(), what,
                                                         temp.path().string(), os_reason(error_number)));
    };
    std::size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t n = ::write(temp.fd(), bytes.data() + written, bytes.size() - written);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw fail("writing the temporary file", errno);
        }
        written += static_cast<std::size_t>(n);
    }
    // fsync before the rename, so that after a crash the target holds the old or the new bytes,
    // never an empty or partial file.
    if (::fsync(temp.fd()) != 0) throw fail("flushing the temporary file", errno);
    if (const int error_number = temp.close(); error_number != 0)
        throw fail("closing the temporary file", error_number);
    std::error_code ec;
    fs::rename(temp.path(), path, ec);
    if (ec) {
        throw FileSystemError(ec.value(),
                              fmt::format("cannot write '{}': renaming the temporary file '{}' onto it failed: {}",
                                          path.string(), temp.path().string(), ec.message()));
    }
    temp.release();
}

}  // namespace

void check_file_name_length(const fs::path& path) {
    const std::string name = path.filename().string();
    const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
    if (const std::size_t longest = longest_file_name(dir); name.size() > longest) {
        // Found now, not when the temporary file cannot be made (after the whole filtering).
        throw FileSystemError(ENAMETOOLONG,
                              fmt::format("cannot write '{}': its file name is {} bytes long", path.string(),
                                          name.size()),
                              fmt::format("a file name of at most {} bytes (the file system's limit)", longest));
    }
}

void write_image(const fs::path& path, const ImageU8& image, const WriteOptions& options) {
    // The place first, as check_writable does; then encode: an unsupported channel count or quality
    // fails before the disk is touched.
    const fs::path dir = check_target_directory(path);
    check_pgm_is_gray(path, image.channels());
    const std::vector<std::uint8_t> bytes = encode_image(image, format_from_extension(path), path.string(), options);
    write_atomically_into(path, dir, bytes);
}

void check_writable(const fs::path& path, int channels) {
    // The place first: a directory named as OUT is one, whatever its name's extension says.
    (void)check_target_directory(path);
    // Encoding a 1x1 image of the same channel count raises exactly the error the real write would.
    check_pgm_is_gray(path, channels);
    (void)encode_image(ImageU8(1, 1, channels), format_from_extension(path), path.string());
}

fs::path file_identity(const fs::path& path) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(path, ec);
    return ec ? fs::absolute(path, ec).lexically_normal() : canonical;
}

fs::path output_location(const fs::path& output) {
    return file_identity(output.has_parent_path() ? output.parent_path() : fs::path(".")) / output.filename();
}

bool output_replaces_input(const fs::path& input, const fs::path& output) {
    return file_identity(input) == output_location(output);
}

void check_file_writable(const fs::path& path) { (void)check_target_directory(path); }

void write_file_atomically(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
    write_atomically_into(path, check_target_directory(path), bytes);
}

}  // namespace klab::io
