#pragma once
// End to end on the GPU, host image to host image (issue 7; seed 000's asynchronous model): the
// image is cut into horizontal strips, each uploaded with the halo rows its mask needs, filtered
// and downloaded, so that one strip's upload, another's kernel and a third's download overlap.
// The host images are pinned (cudaHostRegister) for the run, so that the copies are asynchronous
// DMA. The synchronous path (upload all, filter, download all) stays for comparison: run_one_shot().
//
// Three streams, one per engine: every upload goes on one stream, every kernel on a second, every
// download on a third, and events order each strip's three steps. Each queue thus runs in strip
// order, and the uploads overlap the downloads. `in_flight` device buffers (slots) take the strips
// in turn; a strip's upload waits until the download of the strip before it in its slot has
// finished. Kernels never run two at a time, so a variant's plans need not be safe on concurrent
// streams (conv.constant writes its __constant__ mask in stream order).
//
// Halo rows: a strip of output rows [y0, y1) needs input rows [y0 - r, y1 + r) (r: the mask's
// vertical radius; 1 for Sobel). Rows outside the image are resolved on the host side by the
// problem's border rule (border_index(): a wrapped row is the image's other edge, a constant one a
// row of the value), so the device strip holds only true rows and the variant's own vertical
// border rule never decides an output row: the result equals the one-shot result bit for bit,
// for every border mode, whatever the strip height (a strip may be shorter than the radius).
//
// Convolutions and Sobel only: an integral image carries sums across strips (one shot only).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "harness/image.hpp"
#include "harness/variant.hpp"

namespace klab {

inline constexpr int kMaxStripsInFlight = 16;  // PipelineOptions::in_flight's largest value

struct PipelineOptions {
    int strips = 0;    // 0: automatic (see plan_strip_split), more where the budget needs them
    int in_flight = 3; // strips on the device at once (one device buffer slot each), 1..16
    // Device memory the pipeline may use; 0: device_memory_budget().
    std::size_t device_budget_bytes = 0;
    // Pin the host images (cudaHostRegister) for the run when they are not pinned already; off,
    // pageable memory is copied through the driver's staging buffers (synchronous to the host).
    bool pin_host = true;
};

struct PipelineRun {
    int strips = 0;
    int strip_rows = 0;        // output rows of the largest strip
    int in_flight = 0;
    double milliseconds = 0;   // host wall time: for run_pipelined()/run_one_shot(), allocation and pinning included
    std::string summary() const;  // "12 strips of up to 360 rows, 3 in flight, 41.2 ms"
};

// How a problem is cut: each strip's output rows, top to bottom, and the slots used.
struct StripSplit {
    std::vector<int> rows;  // output rows of each strip; they add up to the image's height
    int strip_rows = 0;     // the largest strip's rows (what a slot holds)
    int strips = 0;         // rows.size()
    int in_flight = 0;      // min(options.in_flight, strips)
};

// The split StripPipeline makes for `options`: options.strips > 0 asks for about that many strips
// (rows split evenly, the last strip taking what is left; more strips than rows give one row
// each); 0 takes 24 strips, fewer where a strip would hold under 2 MiB of input (the last one
// may hold less). Either way the pipeline's device memory (its slots, their plans, the mask) must
// fit the budget (which needs no device when options.device_budget_bytes is set), which may make
// the automatic strips shorter. Throws klab::Error for in_flight outside 1..16, a negative strip
// count, or a budget that cannot hold the strips asked for (naming both).
StripSplit plan_strip_split(const Variant& variant, const Problem& problem, const LaunchShape& shape,
                            const PipelineOptions& options);

// The pipeline's device memory, streams, events and checked launch plans for one problem, made
// once and reused by every run() (a batch of images of one size pays for them once).
class StripPipeline {
public:
    // Plans the strips (options.strips, in_flight, budget), allocates every slot's buffers and
    // prepares the launches. Throws klab::Error as run_pipelined() does.
    StripPipeline(const Variant& variant, const Problem& problem, const LaunchShape& shape, const PipelineOptions& options);
    // The synchronous path's resources: one strip holding the whole image, one slot.
    static StripPipeline one_shot(const Variant& variant, const Problem& problem, const LaunchShape& shape);
    ~StripPipeline();
    StripPipeline(StripPipeline&&) noexcept;
    StripPipeline& operator=(StripPipeline&&) noexcept;

    int strips() const;
    // Filters `input` into `output` (kept when it already has the output's shape, so that a
    // caller may pin it once). The time reported is that of this call, pinning included.
    PipelineRun run(const ImageU8& input, ImageU8& output, bool pin_host = true);

private:
    struct Resources;
    StripPipeline(const Variant& variant, const Problem& problem, const LaunchShape& shape, const PipelineOptions& options,
                  bool one_shot);
    std::unique_ptr<Resources> resources_;
};

// Device memory klab may use: 90% of the device's free memory, or less where the
// KLAB_DEVICE_MEMORY_BUDGET environment variable (bytes, with an optional K, M or G suffix) says so. Throws klab::Error for
// a malformed variable, naming it and what it accepts.
std::size_t device_memory_budget();

// Device memory the one-shot path needs for `problem` (input, output, layout copies, scratch);
// throws klab::Error for a problem the pipeline does not run (strips_support()).
std::size_t one_shot_bytes(const Variant& variant, const Problem& problem, const LaunchShape& shape);

// Whether `problem` can go through strips (convolve, sobel); the reason when not.
Support strips_support(const Problem& problem);

// `input`: the problem's image, AoS on the host (problem.shape gives the layout the variant runs
// in: SoA strips are converted on the device). `output` is resized to output_shape(problem), AoS.
// Throws klab::Error for an unsupported problem, a budget too small for even a one-row strip (the
// message names the budget and the need), or a CUDA error.
PipelineRun run_pipelined(const Variant& variant, const Problem& problem, const LaunchShape& shape, const ImageU8& input,
                          ImageU8& output, const PipelineOptions& options = {});

// The synchronous path: upload the whole image, filter, download, one after another (one strip
// holding the whole image and its halo rows, one slot). Same contract as run_pipelined();
// `pin_host` as in PipelineOptions.
PipelineRun run_one_shot(const Variant& variant, const Problem& problem, const LaunchShape& shape, const ImageU8& input,
                         ImageU8& output, bool pin_host = false);

}  // namespace klab
