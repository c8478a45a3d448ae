#pragma once
// klab apply's options and what every image of a run is filtered with (cli/cmd_apply.cpp reads
// them), the checks of the options that need no file and no device (cli/apply_checks.cpp), and
// the lines both backends print.
#include <filesystem>
#include <string>
#include <vector>

#include "harness/border.hpp"
#include "harness/device_select.hpp"
#include "harness/filter_spec.hpp"
#include "harness/image.hpp"
#include "harness/io/image_io.hpp"

namespace klab::cli::apply {

struct ApplyOptions {
    std::string backend = "cpu";
    std::string variant = "auto";
    std::string layout = "aos";
    std::string filter;
    std::string border = "replicate";
    bool border_given = false;
    int threads = 0;
    std::string block;    // empty: the tuning cache's shape, else the variant's default
    std::string results = "results";  // the tuning cache: <results>/<gpu-slug>/autotune.json
    bool verify = false;  // GPU only: compare with the CPU reference before writing
    int strips = 0;       // GPU: --strips N asks for about N strips (0: the automatic split)
    bool strips_given = false;
    int in_flight = 3;    // GPU: strips on the device at once in the strip path
    bool in_flight_given = false;
    bool sync = false;    // GPU: the synchronous one-shot path
    std::vector<std::string> paths;  // IN OUT; with --out-dir, the inputs
    std::string out_dir;
    std::string list;     // --list FILE: more inputs, one per line
    std::string format;   // --format: the batch outputs' extension; empty keeps the input's
    std::string device;   // GPU: --device N or all; empty: the current device
    int jpeg_quality = io::WriteOptions{}.jpeg_quality;  // --jpeg-quality: the JPEG outputs' quality, 1..100
    bool jpeg_quality_given = false;
};

// What every image of a run is filtered with, parsed once.
struct Setup {
    FilterSpec spec;
    Border border;
    Layout layout = Layout::aos;
    int threads = 1;
    io::WriteOptions write;  // how every output file is encoded (the JPEG quality)
};

// Progress lines and the GPU's choices: warnings to stderr, the rest to stdout.
void print_note(const std::string& note);

// "box:5 (convolve 5x5)"
std::string filter_text(const FilterSpec& spec);
// " with border B", or "" for the integral image, whose sums read no pixel outside the image.
std::string border_text(const FilterSpec& spec, const Border& border);

// Option checks that need no file and no device, so that a typo costs nothing (cli/apply_checks.cpp).
// Each throws klab::Error naming the option and what is allowed.

// IN OUT, or --out-dir DIR with inputs; the batch-only options need --out-dir.
void check_mode_options(const ApplyOptions& o);
// The GPU-only options make no sense for the reference; say so instead of ignoring them.
void check_cpu_options(const ApplyOptions& o);
// --device all spreads a batch over the GPUs: one file runs on one.
void check_device_option(const ApplyOptions& o, const DeviceRequest& request);
// --sync is the one-shot path, one piece at a time: strips in flight contradict it.
void check_pipeline_options(const ApplyOptions& o);
// An integral image's sums read no pixel outside the image: a --border given with it would do nothing.
void check_border_option(const ApplyOptions& o, const FilterSpec& spec);
// --jpeg-quality sets how JPEG outputs are encoded: given where no output is a JPEG, it would do
// nothing, so say so instead of ignoring it. `outputs`: the run's output paths, their extensions
// checked (io::check_writable, plan_batch).
void check_jpeg_quality_option(const ApplyOptions& o, const std::vector<std::filesystem::path>& outputs);
// The GPU runs what the strip pipeline runs (convolutions and Sobel); say which op lacks what.
void require_gpu_operation(const FilterSpec& spec);

}  // namespace klab::cli::apply
