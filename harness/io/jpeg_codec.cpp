// JPEG through libjpeg / libjpeg-turbo.
//
// Read: gray -> 1 channel, YCbCr (or RGB) -> 3 channels; CMYK and YCCK are refused, and so are
// kinds of JPEG that libjpeg's 8-bit interface does not decode (12-bit samples, say). libjpeg's
// warnings (corrupt or truncated data, which it would otherwise paper over with gray) are treated
// as errors: a damaged file is refused rather than decoded into plausible-looking pixels. A file
// too short for the size its header declares is refused before the pixels are allocated, and one
// of more than 500 scans (kMaxJpegScans) before it keeps the decoder busy for hours. Arithmetic-
// coded JPEGs are refused: their decoder supplies zeros past the end of the data without a warning
// (hitting a marker early is legal there), so a cut-short file would decode into plausible pixels,
// and no size floor bounds what a small file may declare.
// Write: 1 (gray) or 3 (RGB, stored as YCbCr with libjpeg's default 4:2:0 chroma subsampling)
// channels, quality 1..100, baseline.
//
// libjpeg reports errors by calling error_exit, which must not return. Ours longjmps back to the
// setjmp in the small functions below, which keep only trivially destructible locals (C structs
// and pointers) between setjmp and any libjpeg call, so the jump skips no C++ destructor. They
// return false with the message copied into a char buffer, and the caller throws klab::Error from
// ordinary code.
#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE and size_t declared first
#include <cstdlib>
#include <cstring>
#include <new>

#include <jpeglib.h>
#include <jerror.h>  // ERREXIT1, JERR_OUT_OF_MEMORY, JERR_BAD_PRECISION, JERR_SOF_UNSUPPORTED

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/io/image_codec.hpp"

namespace klab::io::detail {
namespace {

struct JpegErrorManager {
    jpeg_error_mgr base;  // first member: libjpeg sees a jpeg_error_mgr*
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int code;             // libjpeg's message code of the error (JERR_...)
    bool too_many_scans;  // set by stop_after_many_scans before it jumps
};

// A progressive JPEG may hold thousands of valid scans, each a pass over the whole image: a small
// file that keeps the decoder busy for hours. Encoders write about 10 (cjpeg allows 100).
constexpr int kMaxJpegScans = 500;

// libjpeg's progress monitor, called over and over while jpeg_start_decompress reads the scans.
void stop_after_many_scans(j_common_ptr cinfo) {
    if (reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number <= kMaxJpegScans) return;
    auto* manager = reinterpret_cast<JpegErrorManager*>(cinfo->err);
    manager->too_many_scans = true;
    std::longjmp(manager->jump, 1);
}

[[noreturn]] void jump_on_error(j_common_ptr cinfo) {
    auto* manager = reinterpret_cast<JpegErrorManager*>(cinfo->err);
    (*cinfo->err->format_message)(cinfo, manager->message);
    manager->code = cinfo->err->msg_code;
    std::longjmp(manager->jump, 1);
}

// The error of a file libjpeg could not read: a valid JPEG of a kind it does not decode (12-bit
// samples, lossless or hierarchical coding) is named as such, not as corrupt.
Error read_error(const std::string& name, const JpegErrorManager& manager) {
    if (manager.code == JERR_BAD_PRECISION || manager.code == JERR_SOF_UNSUPPORTED) {
        return Error(fmt::format("{}: a kind of JPEG klab does not decode (libjpeg: {})", name, manager.message),
                     "8-bit baseline or progressive JPEG, gray or RGB");
    }
    return Error(fmt::format("{}: the JPEG data is corrupt or truncated (libjpeg: {})", name, manager.message),
                 "a complete, valid JPEG file");
}

// msg_level -1 is a warning (corrupt data); higher levels are trace messages, which we drop
// instead of printing them to stderr.
void jump_on_warning(j_common_ptr cinfo, int msg_level) {
    if (msg_level < 0) jump_on_error(cinfo);
}

void install_error_manager(JpegErrorManager& manager) {
    jpeg_std_error(&manager.base);
    manager.base.error_exit = jump_on_error;
    manager.base.emit_message = jump_on_warning;
    manager.message[0] = '\0';
    manager.code = 0;
    manager.too_many_scans = false;
}

// --- decoding -------------------------------------------------------------------------------

// Reads the headers: fills cinfo's image size and colour space. False on error (see manager).
// Creating the decompressor here too puts its errors (out of memory) under the same setjmp.
bool read_jpeg_header(jpeg_decompress_struct* cinfo, JpegErrorManager* manager, const std::uint8_t* data,
                      std::size_t size) {
    if (setjmp(manager->jump)) return false;
    jpeg_create_decompress(cinfo);
    jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
    jpeg_read_header(cinfo, TRUE);
    return true;
}

// Decodes every scanline into rows `pitch` bytes apart from `pixels`. False on error.
bool read_jpeg_pixels(jpeg_decompress_struct* cinfo, JpegErrorManager* manager, std::uint8_t* pixels,
                      std::size_t pitch) {
    if (setjmp(manager->jump)) return false;
    jpeg_start_decompress(cinfo);
    while (cinfo->output_scanline < cinfo->output_height) {
        JSAMPROW row = pixels + static_cast<std::size_t>(cinfo->output_scanline) * pitch;
        jpeg_read_scanlines(cinfo, &row, 1);
    }
    jpeg_finish_decompress(cinfo);
    return true;
}

// Owns the decompressor so that every exit path destroys it. jpeg_destroy_* is safe on a struct
// that was zeroed but never created (it checks cinfo->mem).
struct Decompressor {
    jpeg_decompress_struct cinfo{};
    JpegErrorManager manager{};
    jpeg_progress_mgr progress{};
    Decompressor() {
        install_error_manager(manager);
        cinfo.err = &manager.base;
        progress.progress_monitor = stop_after_many_scans;
    }
    Decompressor(const Decompressor&) = delete;
    Decompressor& operator=(const Decompressor&) = delete;
    ~Decompressor() { jpeg_destroy_decompress(&cinfo); }
};

// --- encoding -------------------------------------------------------------------------------

// A destination that grows a malloc'd buffer we own. (jpeg_mem_dest would do, but after an error
// its *outbuffer may point at memory it has already freed, so we could not release it safely.)
struct GrowingDestination {
    jpeg_destination_mgr base;  // first member: libjpeg sees a jpeg_destination_mgr*
    unsigned char* data;
    std::size_t capacity;
    std::size_t size;  // set by term_destination
};

void start_destination(j_compress_ptr cinfo) {
    auto* dest = reinterpret_cast<GrowingDestination*>(cinfo->dest);
    dest->base.next_output_byte = dest->data;
    dest->base.free_in_buffer = dest->capacity;
}

// Called when the buffer is full (free_in_buffer == 0): double it.
boolean grow_destination(j_compress_ptr cinfo) {
    auto* dest = reinterpret_cast<GrowingDestination*>(cinfo->dest);
    const std::size_t new_capacity = dest->capacity * 2;
    auto* grown = static_cast<unsigned char*>(std::realloc(dest->data, new_capacity));
    if (grown == nullptr) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
    dest->data = grown;
    dest->base.next_output_byte = grown + dest->capacity;
    dest->base.free_in_buffer = new_capacity - dest->capacity;
    dest->capacity = new_capacity;
    return TRUE;
}

void finish_destination(j_compress_ptr cinfo) {
    auto* dest = reinterpret_cast<GrowingDestination*>(cinfo->dest);
    dest->size = dest->capacity - dest->base.free_in_buffer;
}

bool write_jpeg(jpeg_compress_struct* cinfo, JpegErrorManager* manager, GrowingDestination* dest,
                const std::uint8_t* pixels, int width, int height, int channels, int quality) {
    if (setjmp(manager->jump)) return false;
    jpeg_create_compress(cinfo);  // zeroes everything but cinfo->err, so set dest afterwards
    cinfo->dest = &dest->base;
    cinfo->image_width = static_cast<JDIMENSION>(width);
    cinfo->image_height = static_cast<JDIMENSION>(height);
    cinfo->input_components = channels;
    cinfo->in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(cinfo);
    jpeg_set_quality(cinfo, quality, TRUE);  // TRUE: baseline-compatible quantisation tables
    jpeg_start_compress(cinfo, TRUE);
    const std::size_t row_bytes = static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
    while (cinfo->next_scanline < cinfo->image_height) {
        // libjpeg does not modify input rows; its API just lacks const.
        JSAMPROW row = const_cast<std::uint8_t*>(pixels) + static_cast<std::size_t>(cinfo->next_scanline) * row_bytes;
        jpeg_write_scanlines(cinfo, &row, 1);
    }
    jpeg_finish_compress(cinfo);
    return true;
}

struct Compressor {
    jpeg_compress_struct cinfo{};
    JpegErrorManager manager{};
    GrowingDestination dest{};
    explicit Compressor(std::size_t initial_capacity) {
        dest.data = static_cast<unsigned char*>(std::malloc(initial_capacity));
        if (dest.data == nullptr) throw std::bad_alloc();
        dest.capacity = initial_capacity;
        dest.base.init_destination = start_destination;
        dest.base.empty_output_buffer = grow_destination;
        dest.base.term_destination = finish_destination;
        install_error_manager(manager);
        cinfo.err = &manager.base;
    }
    Compressor(const Compressor&) = delete;
    Compressor& operator=(const Compressor&) = delete;
    ~Compressor() {
        jpeg_destroy_compress(&cinfo);
        std::free(dest.data);
    }
};

}  // namespace

ImageU8 decode_jpeg(const std::vector<std::uint8_t>& bytes, const std::string& name, std::int64_t max_pixels) {
    Decompressor jpeg;
    if (!read_jpeg_header(&jpeg.cinfo, &jpeg.manager, bytes.data(), bytes.size())) throw read_error(name, jpeg.manager);
    int channels = 0;
    switch (jpeg.cinfo.jpeg_color_space) {
        case JCS_GRAYSCALE:
            channels = 1;
            jpeg.cinfo.out_color_space = JCS_GRAYSCALE;
            break;
        case JCS_YCbCr:
        case JCS_RGB:
            channels = 3;
            jpeg.cinfo.out_color_space = JCS_RGB;
            break;
        case JCS_CMYK:
        case JCS_YCCK: throw Error(fmt::format("{}: CMYK JPEG is not supported", name), "gray or RGB (YCbCr) JPEG");
        default:
            throw Error(fmt::format("{}: JPEG with an unknown colour space ({} components) is not supported", name,
                                    jpeg.cinfo.num_components),
                        "gray or RGB (YCbCr) JPEG");
    }
    if (jpeg.cinfo.arith_code) {
        throw Error(fmt::format("{}: an arithmetic-coded JPEG, which klab does not decode: its decoder fills data cut short "
                                "with zeros and gives no warning, so a damaged file could not be told from a whole one",
                                name),
                    "a Huffman-coded (baseline or progressive) JPEG, gray or RGB");
    }
    // No scaling is requested, so the output size is the header's size.
    validate_size(jpeg.cinfo.image_width, jpeg.cinfo.image_height, name, max_pixels);
    // Huffman coding spends at least one bit on every 8x8 block of the first component (its DC
    // difference) in the first scan that holds it: a file with less is truncated, or a header
    // lying about a huge size, refused before the pixels are allocated.
    const std::uint64_t blocks =
        std::uint64_t{jpeg.cinfo.comp_info[0].width_in_blocks} * jpeg.cinfo.comp_info[0].height_in_blocks;
    if (bytes.size() < blocks / 8) {
        throw Error(fmt::format("{}: the JPEG data is truncated: a {}x{} image needs at least {} bytes, the file has {}", name,
                                jpeg.cinfo.image_width, jpeg.cinfo.image_height, blocks / 8, bytes.size()),
                    "a complete, valid JPEG file");
    }
    ImageU8 image(static_cast<int>(jpeg.cinfo.image_width), static_cast<int>(jpeg.cinfo.image_height), channels);
    jpeg.cinfo.progress = &jpeg.progress;
    if (!read_jpeg_pixels(&jpeg.cinfo, &jpeg.manager, image.data(), image.pitch_bytes())) {
        if (jpeg.manager.too_many_scans) {
            throw Error(fmt::format("{}: the JPEG has more than {} scans", name, kMaxJpegScans),
                        fmt::format("at most {} scans (encoders write about 10)", kMaxJpegScans));
        }
        throw read_error(name, jpeg.manager);
    }
    return image;
}

std::vector<std::uint8_t> encode_jpeg(const ImageU8& image, const std::string& name, int quality) {
    if (image.channels() != 1 && image.channels() != 3) {
        throw Error(fmt::format("{}: JPEG cannot store an image with {} channels ({})", name, image.channels(),
                                channels_name(image.channels())),
                    "1 (gray) or 3 (RGB) channels; write RGBA images as PNG");
    }
    if (quality < 1 || quality > 100) {
        throw Error(fmt::format("{}: JPEG quality {} is out of range", name, quality), "1 to 100");
    }
    const std::vector<std::uint8_t> pixels = packed_interleaved(image);
    Compressor jpeg(pixels.size() / 4 + 4096);  // a first guess; the destination grows as needed
    if (!write_jpeg(&jpeg.cinfo, &jpeg.manager, &jpeg.dest, pixels.data(), image.width(), image.height(),
                    image.channels(), quality)) {
        throw Error(fmt::format("{}: JPEG encoding failed (libjpeg: {})", name, jpeg.manager.message));
    }
    return std::vector<std::uint8_t>(jpeg.dest.data, jpeg.dest.data + jpeg.dest.size);
}

}  // namespace klab::io::detail
