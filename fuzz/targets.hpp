#pragma once
// The bodies of klab's fuzz targets (fuzz/README.md). Each feeds one input to one parser through
// the function klab itself calls, then checks what klab promises about the outcome:
//   - the input is accepted, and the result is what the parser's header says it returns, or
//   - it is refused with a klab::Error whose message is one line that names the input (the file)
//     and says what is allowed ("...; allowed: ...").
// Any other exception escaping, a crash, a sanitizer report or a leak is a bug. A broken promise
// throws Violation. The libFuzzer executables (fuzz/fuzz_entry.cpp) and the CPU test that replays
// the regression inputs (tests/cpu/test_fuzz_regressions.cpp) both call these.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace klab::fuzz {

struct Violation : std::logic_error {
    using std::logic_error::logic_error;
};

// The name a target gives its input in klab's messages (the file name a user would see).
inline constexpr const char* kInputName = "fuzz-input";
// Images above this many pixels are refused before allocation (klab's own limit, 2^30, is more
// memory than a fuzzer may take); the code path is the same.
inline constexpr std::int64_t kMaxFuzzPixels = std::int64_t{1} << 18;

using TargetFunction = void (*)(const std::uint8_t* data, std::size_t size);

// io::decode_image (PNG, JPEG, PNM by their first bytes): the decoded image and its round trip
// through klab's own encoders (PNM for 1 and 3 channels, PNG for 4).
void image(const std::uint8_t* data, std::size_t size);
// parse_mask: a mask file's text; a parsed mask is also factored (separable_variant_factors).
void mask(const std::uint8_t* data, std::size_t size);
// The specs users type: parse_filter_spec (--filter; mask:FILE only with a plain file name),
// parse_border (--border), parse_block_shape (--block), parse_problem_class (a tuning class).
void spec(const std::uint8_t* data, std::size_t size);
// bench::parse_bench_json, then what `klab report` and `klab compare` ask of the result.
void bench_json(const std::uint8_t* data, std::size_t size);
// autotune::TuningCache::parse (the text of results/nvidia-h200/autotune.json), then a lookup of
// every record's class, as `klab apply --variant auto` does.
void tuning_cache(const std::uint8_t* data, std::size_t size);
// cli::parse_input_list: the text of `klab apply --list FILE`.
void apply_list(const std::uint8_t* data, std::size_t size);

struct Target {
    const char* name;         // the folder under data/fuzz/ holding its seeds and regressions
    TargetFunction function;  // several targets may share one function (png, jpeg, pnm)
};
// Every target, in a fixed order.
const std::vector<Target>& targets();

}  // namespace klab::fuzz
