#pragma once
// The one exception type of klab. Its message says what was wrong and, where it helps, what is
// allowed, so that a user can fix the input without reading the code.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace klab {

class Error : public std::runtime_error {
public:
    // `problem`: what was wrong ("mask is 4x3"); `allowed`: what would have been accepted
    // ("odd width and height from 1 to 31"). The message reads "problem; allowed: allowed".
    explicit Error(const std::string& problem, const std::string& allowed = {})
        : std::runtime_error(allowed.empty() ? problem : problem + "; allowed: " + allowed) {}
};

// An Error that the file system reported (a file not found, a directory not writable, a disk full):
// it keeps the errno, so that a caller can tell "not found" from "not allowed" without reading the
// message (the Python binding raises the matching OSError subclass, e.g. FileNotFoundError).
class FileSystemError : public Error {
public:
    FileSystemError(int error_number, const std::string& problem, const std::string& allowed = {})
        : Error(problem, allowed), error_number_(error_number) {}
    int error_number() const noexcept { return error_number_; }

private:
    int error_number_;
};

// Text read from a file or typed by a user, as a message quotes it: control characters (a NUL,
// a line break, a terminal escape) written as \xHH, so that the message stays one whole line.
inline std::string printable(std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        const auto byte = static_cast<unsigned char>(ch);
        if (byte < 0x20 || byte == 0x7F) {
            out += "\\x";
            out += kHex[byte >> 4];
            out += kHex[byte & 0xF];
        } else {
            out += ch;
        }
    }
    return out;
}

// A long text quoted in a message, its first `head` and last `tail` bytes kept around
// " ... (N bytes left out) ... ", so that the message stays a line one can read: a JSON parser's
// "last read: '...'" quotes a whole unterminated string, which may be most of a file.
inline std::string shortened(std::string_view text, std::size_t head = 160, std::size_t tail = 80) {
    constexpr std::size_t kMarkerBytes = 40;  // shorter texts are kept whole: the marker would not save much
    if (text.size() <= head + tail + kMarkerBytes) return std::string(text);
    return std::string(text.substr(0, head)) + " ... (" + std::to_string(text.size() - head - tail) + " bytes left out) ... " +
           std::string(text.substr(text.size() - tail));
}

}  // namespace klab
