#include "fuzz/targets.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "autotune/problem_class.hpp"
#include "autotune/tuning_cache.hpp"
#include "bench/bench_json.hpp"
#include "cli/apply_batch.hpp"
#include "harness/border.hpp"
#include "harness/error.hpp"
#include "harness/filter_spec.hpp"
#include "harness/image.hpp"
#include "harness/io/image_io.hpp"
#include "harness/mask.hpp"
#include "harness/variant.hpp"
#include "tests/common/named_variant.hpp"

namespace klab::fuzz {

namespace {

std::string text_of(const std::uint8_t* data, std::size_t size) {
    return std::string(reinterpret_cast<const char*>(data), size);
}

void expect(bool promise_kept, const std::string& promise) {
    if (!promise_kept) throw Violation(promise);
}

// A refusal: one line that names the input and says what is allowed. (A control character would
// break the line, cut the message short at a NUL, or drive the terminal.)
void check_refusal(const Error& e, std::string_view input_name) {
    const std::string what = e.what();
    // (The promise's text is built once, not per character: a message of n bytes cost n^2.)
    const bool one_printable_line = std::all_of(what.begin(), what.end(), [](char ch) {
        const auto byte = static_cast<unsigned char>(ch);
        return byte >= 0x20 && byte != 0x7F;
    });
    expect(one_printable_line, "the message is one line of printable text: " + printable(what));
    expect(what.find(input_name) != std::string::npos, fmt::format("the message names {}: {}", input_name, what));
    expect(what.find("; allowed: ") != std::string::npos, "the message says what is allowed: " + what);
}

// Runs `parse`; a klab::Error must be a proper refusal (anything else escapes: a bug).
template <class Parse>
void parse_or_refuse(std::string_view input_name, Parse parse) {
    try {
        parse();
    } catch (const Error& e) {
        check_refusal(e, input_name);
    }
}

}  // namespace

void image(const std::uint8_t* data, std::size_t size) {
    const std::vector<std::uint8_t> bytes(data, data + size);
    parse_or_refuse(kInputName, [&] {
        const ImageU8 decoded = io::decode_image(bytes, kInputName, kMaxFuzzPixels);
        const int channels = decoded.channels();
        expect(channels == 1 || channels == 3 || channels == 4, fmt::format("1, 3 or 4 channels, not {}", channels));
        expect(decoded.layout() == Layout::aos, "an AoS image");
        expect(decoded.width() >= 1 && decoded.height() >= 1 &&
                   static_cast<std::int64_t>(decoded.shape().pixels()) <= kMaxFuzzPixels,
               fmt::format("a size within the limit, not {}x{}", decoded.width(), decoded.height()));
        // What klab reads, it writes back unchanged (small images: encoding is slow).
        if (decoded.shape().pixels() > 4096) return;
        const io::ImageFormat format = channels == 4 ? io::ImageFormat::png : io::ImageFormat::pnm;
        const ImageU8 again = io::decode_image(io::encode_image(decoded, format, "round-trip"), "round-trip");
        expect(same_pixels(decoded, again), "the decoded image survives klab's own encoder unchanged");
    });
}

void mask(const std::uint8_t* data, std::size_t size) {
    const std::string text = text_of(data, size);
    parse_or_refuse(kInputName, [&] {
        const Mask parsed = parse_mask(text, kInputName);
        const int w = parsed.width(), h = parsed.height();
        expect(w % 2 == 1 && h % 2 == 1 && w <= Mask::kMaxSide && h <= Mask::kMaxSide, fmt::format("odd sides up to 31, not {}x{}", w, h));
        expect(parsed.coefficients().size() == static_cast<std::size_t>(w) * h, "width*height coefficients");
        for (float c : parsed.coefficients()) expect(std::isfinite(c), "finite coefficients");
        if (const auto factors = separable_variant_factors(parsed)) {
            const double e = separable_coefficient_error(parsed, *factors);
            expect(std::isfinite(e) && e >= 0.0, fmt::format("a finite coefficient error, not {}", e));
        }
    });
}

void spec(const std::uint8_t* data, std::size_t size) {
    const std::string text = text_of(data, size);
    // mask:FILE reads the file: only names in the working directory, never a device or /proc.
    const bool names_a_path = text.rfind("mask:", 0) == 0 && text.find('/') != std::string::npos;
    if (!names_a_path) {
        parse_or_refuse("", [&] {
            const FilterSpec filter = parse_filter_spec(text);
            expect(filter.text == text, "the spec keeps its text");
            expect((filter.operation == Operation::convolve) == filter.mask.has_value(), "a mask exactly for a convolution");
        });
    }
    parse_or_refuse("", [&] {
        const Border border = parse_border(text);
        const Border again = parse_border(to_string(border));
        expect(again.mode == border.mode && again.value == border.value, "a border reads back as itself: " + to_string(border));
    });
    parse_or_refuse("", [&] {
        const LaunchShape shape = parse_block_shape(text);
        expect(shape.block_x >= 1 && shape.block_x <= 1024 && shape.block_y >= 1 && shape.block_y <= 1024,
               "block sides 1..1024: " + to_string(shape));
    });
    parse_or_refuse("", [&] {
        const autotune::ProblemClass c = autotune::parse_problem_class(text);
        expect(autotune::parse_problem_class(to_string(c)) == c, "a class reads back as itself: " + to_string(c));
    });
}

void bench_json(const std::uint8_t* data, std::size_t size) {
    const std::string text = text_of(data, size);
    parse_or_refuse(kInputName, [&] {
        const bench::BenchFile file = bench::parse_bench_json(text, kInputName);
        (void)file.gpu_key();
        std::set<std::string> names;
        for (const bench::BenchRun& run : file.runs) {
            expect(names.insert(run.name).second, "one run per name: " + run.name);
            expect(file.find(run.name) == &run, "find() gives the run of that name");
            for (double us : run.samples_us) expect(std::isfinite(us) && us >= 0.0, fmt::format("finite times >= 0, not {}", us));
            for (const auto& [key, value] : run.counters) expect(std::isfinite(value), fmt::format("a finite counter {}", key));
            const double median = run.median_us();
            expect(std::isfinite(median) && median >= 0.0, "a finite median");
            if (run.parts) {
                const std::optional<bench::BenchName> again = bench::BenchName::parse(run.parts->text());
                expect(again && again->text() == run.parts->text(), "a benchmark name reads back as itself: " + run.name);
                (void)bench::npp_family(run.parts->filter);
                (void)bench::is_link_row(run.parts->row);
            }
        }
    });
}

void tuning_cache(const std::uint8_t* data, std::size_t size) {
    const std::string text = text_of(data, size);
    parse_or_refuse(kInputName, [&] {
        const autotune::TuningCache cache = autotune::TuningCache::parse(text, kInputName, "nvidia-h200");
        for (const autotune::TuningRecord& record : cache.records()) {
            expect(record.gpu.slug() == "nvidia-h200", "records of the folder's GPU only");
            expect(autotune::parse_problem_class(to_string(record.problem_class)) == record.problem_class,
                   "a class reads back as itself");
            expect(!record.top.empty(), "a measured candidate");
            for (const autotune::MeasuredCandidate& m : record.top) {
                const auto threads = static_cast<long long>(m.shape.block_x) * m.shape.block_y;
                expect(m.shape.block_x >= 1 && m.shape.block_y >= 1 && threads <= 1024, "blocks of 1..1024 threads");
                expect(std::isfinite(m.us.median) && m.us.q1 > 0.0 && m.us.q1 <= m.us.median && m.us.median <= m.us.q3,
                       "ordered, finite quartiles");
            }
            // What `klab apply --variant auto` does with a record.
            const test::NamedVariant variant(record.variant);
            const Problem problem = autotune::representative_problem(record.problem_class);
            const autotune::Lookup found = autotune::lookup(cache, variant, {record.source_hash, {}}, problem, record.gpu);
            expect(found.level == autotune::LookupLevel::exact, "a record is found for its own class and GPU");
        }
    });
}

void apply_list(const std::uint8_t* data, std::size_t size) {
    const std::string text = text_of(data, size);
    parse_or_refuse(kInputName, [&] {
        for (const std::string& path : cli::parse_input_list(text, kInputName)) {
            expect(!path.empty() && path.front() != '#', "no blank or comment line becomes a path");
            expect(path.find_first_of(std::string("\n\0", 2)) == std::string::npos, "a path holds no line break or NUL");
            const auto is_space = [](char ch) { return std::isspace(static_cast<unsigned char>(ch)) != 0; };
            expect(!is_space(path.front()) && !is_space(path.back()), "paths are trimmed");
        }
    });
}

const std::vector<Target>& targets() {
    static const std::vector<Target> all = {
        {"png", image},   {"jpeg", image},       {"pnm", image},          {"mask", mask},
        {"spec", spec},   {"bench_json", bench_json}, {"tuning_cache", tuning_cache}, {"apply_list", apply_list},
    };
    return all;
}

}  // namespace klab::fuzz
