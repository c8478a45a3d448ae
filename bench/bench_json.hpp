#pragma once
// Reading klab-bench's Google Benchmark JSON (bench/README.md): benchmark names split into their
// parts, repetitions grouped per benchmark, and the context keys klab adds. `klab report` and
// `klab compare` read files only through this.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace klab::bench {

// "conv.halo_tiled/8K/rgb.aos/gauss9/replicate[/block:32x8]", without Google Benchmark's
// "/manual_time" (GPU rows) or "/real_time" (CPU rows).
struct BenchName {
    std::string row;     // variant, "baseline.copy", "npp.gauss", "cpu.reference", ...
    std::string size;    // "8K", "HD", "1000x700"
    std::string format;  // "rgb.aos", "gray", ...
    std::string filter;  // "gauss9", "box9", "sobel", "integral", "copy"
    std::string border;  // "replicate", "none", ...
    std::string block;   // "32x8" in the block-shape study, else empty

    std::string text() const;  // the name again, without "/manual_time"
    // Parses a run name (Google Benchmark's "run_name"), with or without the time suffix;
    // nullopt when it does not have klab's five parts.
    static std::optional<BenchName> parse(std::string_view name);
    // The row's problem without the row: "8K/rgb.aos/gauss9/replicate" (block excluded).
    std::string problem() const;
};

// The NPP row family a klab row of `filter` is compared with ("gauss9" -> "npp.gauss"; "" for
// none): bench/README.md, "Comparing a row with NPP". The study picks its NPP rows by it too.
std::string npp_family(const std::string& filter);

// Whether `row` is one of the host-device link floors of the end-to-end rows (e2e.upload,
// e2e.download, e2e.bidirectional): they copy the image's bytes and filter nothing.
bool is_link_row(std::string_view row);

// One benchmark with its repetitions.
struct BenchRun {
    std::string name;                // run name without the time suffix
    std::optional<BenchName> parts;  // nullopt for a name klab did not write
    std::vector<double> samples_us;  // one per repetition: that repetition's mean time per iteration
    std::map<std::string, double> counters;  // each counter's median over the repetitions
    std::string label;               // of the first repetition
    std::string error;               // Google Benchmark's error_message when the benchmark failed
    double median_us() const;        // of samples_us; 0 when there is none
};

struct BenchFile {
    std::string source;                          // the path, for messages
    std::map<std::string, std::string> context;  // Google Benchmark's and klab's context keys, as text
    std::vector<BenchRun> runs;                  // in the file's order
    std::string gpu_key() const;                 // context["klab_gpu_key"], "" when absent
    std::string context_value(const std::string& key) const;  // "" when absent
    const BenchRun* find(std::string_view name) const;
};

// Parses Google Benchmark JSON text. Throws klab::Error naming `source` when it is not such a
// file (not JSON, nested deeper than 64 levels, no "benchmarks" array, an entry without a name or
// time, a field of another type than Google Benchmark writes, a negative time).
BenchFile parse_bench_json(const std::string& text, const std::string& source);
BenchFile load_bench_file(const std::filesystem::path& path);  // throws klab::Error when unreadable

}  // namespace klab::bench
