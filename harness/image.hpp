#pragma once
// The image model shared by the CPU reference, the I/O code and the kernels.
//
// An image has a width, a height, 1, 3 or 4 channels, a layout and a row pitch in bytes:
//   AoS (interleaved): `height` rows; row y holds width*channels elements, pixel by pixel.
//   SoA (planar):      `channels` planes of `height` rows; row y of plane c holds `width` elements.
// Rows start `pitch_bytes` apart (pitch >= the bytes of a row); planes start height*pitch apart.
// ImageView is a non-owning, trivially copyable description that kernels take by value;
// HostImage owns host storage; DeviceImage (device_image.hpp) is its twin in device memory.
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "harness/host_device.hpp"

namespace klab {

enum class Layout : std::uint8_t { aos, soa };

// The largest image klab handles: sides up to 2^17 and at most 2^30 pixels (e.g. 32768 x 32768;
// 8K is 2^25 pixels). Checked before any allocation, so an absurd size fails at once.
inline constexpr int kMaxImageSide = 1 << 17;
inline constexpr std::int64_t kMaxImagePixels = std::int64_t{1} << 30;

const char* to_string(Layout layout);
Layout parse_layout(const std::string& text);  // "aos" or "soa"

struct ImageShape {
    int width = 0;
    int height = 0;
    int channels = 1;
    Layout layout = Layout::aos;

    // Elements in one stored row: width*channels for AoS, width for SoA.
    KLAB_HD int row_elements() const { return layout == Layout::aos ? width * channels : width; }
    // Stored rows: height for AoS, channels*height for SoA.
    KLAB_HD int rows() const { return layout == Layout::aos ? height : channels * height; }
    KLAB_HD std::size_t pixels() const {
        return static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
    }
};

inline bool operator==(const ImageShape& a, const ImageShape& b) {
    return a.width == b.width && a.height == b.height && a.channels == b.channels && a.layout == b.layout;
}
inline bool operator!=(const ImageShape& a, const ImageShape& b) { return !(a == b); }

std::string to_string(const ImageShape& shape);  // "640x480x3 aos"

// Throws klab::Error unless 1 <= width, height <= kMaxImageSide and width*height <= max_pixels
// (kMaxImagePixels, or a lower limit where a caller sets one). 64-bit, so that a size read from a
// file header is checked before anything narrows or allocates it; `context` (e.g. the file name)
// starts the message when given.
void validate_size(std::int64_t width, std::int64_t height, const std::string& context = {},
                   std::int64_t max_pixels = kMaxImagePixels);
// validate_size, and channels is 1, 3 or 4.
void validate_shape(const ImageShape& shape);

template <class T>
struct ImageView {
    T* data = nullptr;
    ImageShape shape;
    std::size_t pitch_bytes = 0;

    ImageView() = default;
    KLAB_HD ImageView(T* data_, ImageShape shape_, std::size_t pitch_bytes_)
        : data(data_), shape(shape_), pitch_bytes(pitch_bytes_) {}
    // A view of mutable pixels converts to a view of const pixels, never the other way.
    template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
    KLAB_HD ImageView(const ImageView<U>& other)
        : data(other.data), shape(other.shape), pitch_bytes(other.pitch_bytes) {}

    // First element of stored row `y` of plane `c` (the plane is 0 for AoS).
    KLAB_HD T* row(int y, int c = 0) const {
        using Byte = std::conditional_t<std::is_const_v<T>, const unsigned char, unsigned char>;
        const std::size_t stored_row = shape.layout == Layout::aos
                                           ? static_cast<std::size_t>(y)
                                           : static_cast<std::size_t>(c) * shape.height + y;
        return reinterpret_cast<T*>(reinterpret_cast<Byte*>(data) + stored_row * pitch_bytes);
    }
    KLAB_HD T& at(int x, int y, int c) const {
        return shape.layout == Layout::aos ? row(y)[x * shape.channels + c] : row(y, c)[x];
    }
};

// Host image with owned storage. Copyable and movable; the pitch is kept on copy.
template <class T>
class HostImage {
public:
    HostImage() = default;
    // pitch_bytes == 0 means tightly packed rows. Otherwise it must be at least the bytes of a
    // row and a multiple of sizeof(T). Elements start zeroed.
    explicit HostImage(ImageShape shape, std::size_t pitch_bytes = 0);
    HostImage(int width, int height, int channels, Layout layout = Layout::aos,
              std::size_t pitch_bytes = 0)
        : HostImage(ImageShape{width, height, channels, layout}, pitch_bytes) {}

    const ImageShape& shape() const { return shape_; }
    int width() const { return shape_.width; }
    int height() const { return shape_.height; }
    int channels() const { return shape_.channels; }
    Layout layout() const { return shape_.layout; }
    std::size_t pitch_bytes() const { return pitch_bytes_; }
    bool empty() const { return storage_.empty(); }

    T& at(int x, int y, int c) { return view().at(x, y, c); }
    const T& at(int x, int y, int c) const { return view().at(x, y, c); }
    T* row(int y, int c = 0) { return view().row(y, c); }
    const T* row(int y, int c = 0) const { return view().row(y, c); }

    ImageView<T> view() { return {storage_.data(), shape_, pitch_bytes_}; }
    ImageView<const T> view() const { return {storage_.data(), shape_, pitch_bytes_}; }

    T* data() { return storage_.data(); }
    const T* data() const { return storage_.data(); }
    // All stored bytes, padding included: rows() * pitch_bytes().
    std::size_t size_bytes() const { return storage_.size() * sizeof(T); }

private:
    ImageShape shape_;
    std::size_t pitch_bytes_ = 0;
    std::vector<T> storage_;
};

using ImageU8 = HostImage<std::uint8_t>;

// Compares the pixels (not the padding) of two images; true when shapes and all values match.
template <class T>
bool same_pixels(const HostImage<T>& a, const HostImage<T>& b);

}  // namespace klab
