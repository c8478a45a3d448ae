#pragma once
// The seeds' performance study as a table of benchmark cases (issue 5, bench/README.md): which
// rows klab-bench registers, in the order they run. Three sizes of study: `full` (the seeds'
// tables, for results/<gpu>/), `quick` (HD and 8K only, for a look during development) and
// `smoke` (tiny images, every row kind once, for the CTest smoke test).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autotune/problem_class.hpp"
#include "harness/problem.hpp"
#include "harness/variant.hpp"

namespace klab::bench {

enum class Study { smoke, quick, full };
Study parse_study(std::string_view text);  // throws klab::Error naming the allowed values
const char* to_string(Study study);

enum class RowKind {
    variant,         // a registered klab variant, timed with CUDA events
    copy,            // baseline.copy: cudaMemcpyAsync device to device of the input's bytes
    npp,             // an NPP call family (npp_baselines.hpp)
    cpu_sequential,  // cpu.reference: the CPU reference on one thread (machines without a GPU)
    cpu_parallel,    // cpu.reference_mt: the CPU reference on every hardware thread
    end_to_end,      // e2e.*: host image to host image (harness/strip_pipeline.hpp), wall-clock time
};

struct BenchCase {
    RowKind kind = RowKind::variant;
    std::string row;        // the name's first part: "conv.halo_tiled", "baseline.copy", "npp.gauss"
    std::string size;       // "8K", "4096x4096": the name's second part
    Problem problem;        // what the row computes (for a copy: the image whose bytes it copies)
    const Variant* variant = nullptr;         // RowKind::variant only
    std::optional<LaunchShape> forced_shape;  // the block-shape study: this shape, not the tuned one

    std::string name() const;  // "conv.halo_tiled/8K/rgb.aos/gauss9/replicate[/block:32x8]"
};

// "gray", "rgb.aos", "rgba.soa": the name's format part.
std::string format_name(const ImageShape& shape);
// "gauss9", "box9", "sobel", "integral": the name's filter part.
std::string filter_name(const Problem& problem);

// Bytes one run of `problem` must read and write at the least: the input once, the output once
// (its element type by the integral rule of docs/numeric-contract.md).
struct Traffic {
    double bytes_read = 0;
    double bytes_written = 0;
    double total() const { return bytes_read + bytes_written; }
};
Traffic minimum_traffic(const Problem& problem);

// The GPU study: klab variants that support each problem, the copy floor rows, and NPP rows when
// `with_npp`. `block_study_shapes` lists the shapes of the block-shape study (every shape of
// conv.tiled_2batch at 100% occupancy on this GPU, from the autotuner's search space); it is
// called only for the full study.
using ShapeLister = std::vector<LaunchShape> (*)(const Variant& variant, const Problem& problem);
std::vector<BenchCase> gpu_study(Study study, bool with_npp, ShapeLister block_study_shapes);
// Without a GPU: the CPU reference, sequential and on every thread.
std::vector<BenchCase> cpu_study(Study study);

// The problem classes of the study's variant rows (convolutions, Sobel, integral images): what
// `klab run` tunes first.
std::vector<autotune::ProblemClass> tuned_classes(Study study);

// The variant and problem of the block-shape study.
inline constexpr std::string_view kBlockStudyVariant = "conv.tiled_2batch";

}  // namespace klab::bench
