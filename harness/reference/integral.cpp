#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/parallel.hpp"
#include "harness/reference/reference.hpp"

namespace klab::reference {

IntegralType integral_type(int width, int height) {
    const unsigned long long largest_sum = 255ull * static_cast<unsigned long long>(width) * height;
    return largest_sum < (1ull << 32) ? IntegralType::u32 : IntegralType::u64;
}

const char* to_string(IntegralType type) { return type == IntegralType::u32 ? "u32" : "u64"; }

template <class T>
HostImage<T> integral(const ImageU8& in, int threads) {
    static_assert(std::is_same_v<T, std::uint32_t> || std::is_same_v<T, std::uint64_t>, "u32 or u64 output");
    if (std::is_same_v<T, std::uint32_t> && integral_type(in.width(), in.height()) == IntegralType::u64) {
        throw Error(fmt::format("a u32 integral of a {}x{} image, whose sums reach 255*W*H = {}", in.width(),
                                in.height(), 255ull * in.width() * in.height()),
                    "u32 while 255*W*H < 2^32 (at most 16843009 pixels), u64 beyond");
    }
    HostImage<T> out(in.shape());
    const int channels = in.channels();
    // Rows first: each row becomes its own running sum, per channel.
    parallel_for(in.height(), threads, [&](int y_begin, int y_end) {
        for (int y = y_begin; y < y_end; ++y) {
            for (int c = 0; c < channels; ++c) {
                T sum = 0;
                for (int x = 0; x < in.width(); ++x) {
                    sum += in.at(x, y, c);
                    out.at(x, y, c) = sum;
                }
            }
        }
    });
    // Then columns: add the row above, top to bottom; threads split the columns.
    parallel_for(in.width(), threads, [&](int x_begin, int x_end) {
        for (int y = 1; y < in.height(); ++y) {
            for (int c = 0; c < channels; ++c) {
                for (int x = x_begin; x < x_end; ++x) out.at(x, y, c) += out.at(x, y - 1, c);
            }
        }
    });
    return out;
}

template HostImage<std::uint32_t> integral<std::uint32_t>(const ImageU8&, int);
template HostImage<std::uint64_t> integral<std::uint64_t>(const ImageU8&, int);

}  // namespace klab::reference
