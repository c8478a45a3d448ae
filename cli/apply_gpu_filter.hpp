#pragma once
// klab apply's GPU backend: the devices a run uses, and GpuFilter, which filters images on one of
// them through a registered variant (named, or auto) and the strip pipeline or the synchronous
// one-shot path, optionally verified against the CPU reference (cli/apply_gpu_filter.cpp).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autotune/tuning_cache.hpp"
#include "autotune/variant_choice.hpp"
#include "cli/apply_batch.hpp"
#include "cli/apply_options.hpp"
#include "harness/device_info.hpp"
#include "harness/device_select.hpp"
#include "harness/problem.hpp"
#include "harness/reference/reference.hpp"
#include "harness/strip_pipeline.hpp"
#include "harness/variant.hpp"

namespace klab::cli::apply {

// The devices the run uses: the one --device names, every one for --device all, else the current
// one; an error without any.
std::vector<DeviceInfo> gpu_devices(const ApplyOptions& o, const DeviceRequest& request);

// Runs the filter on one GPU: the variant and shape (named, or auto: autotune::VariantChooser),
// the pipeline path, the optional verification. Loads the tuning cache once; one object serves
// every file of a batch on its device. Made with its device current; a thread that calls filter()
// makes it current first.
class GpuFilter {
public:
    // After a lost CUDA context (a kernel fault) nothing can be freed: the process's end releases
    // the kept pipeline, instead of an error line for each of its buffers, streams and events.
    void abandon_after_lost_context() { (void)pipeline_.release(); }

    GpuFilter(const ApplyOptions& o, const Setup& s, const Variant* requested, std::optional<LaunchShape> block,
              const DeviceInfo& device);
    // The kept pipeline's streams and memory are freed with their own device current.
    ~GpuFilter();
    GpuFilter(const GpuFilter&) = delete;
    GpuFilter& operator=(const GpuFilter&) = delete;

    int device_index() const { return device_index_; }
    const std::string& device_name() const { return device_; }

    // `notes`: the choices made, as they are made (so that they can be printed even when a later
    // step fails). Throws klab::Error when the image cannot be filtered or fails --verify.
    FilteredImage filter(const ImageU8& image, const std::string& output_name, const reference::Progress& progress,
                         std::vector<std::string>& notes) const;

private:
    // The tuning cache of every GPU under --results; its warnings are printed.
    static autotune::TuningCache load_cache(const std::string& results);

    // The path: --sync the synchronous one shot, from the decoded (pageable) image; otherwise the
    // strip pipeline from pinned memory (cli/apply_gpu_filter.cpp says why, with the H200's times).
    PipelineRun run_path(const Variant& variant, const Problem& problem, const LaunchShape& shape, const ImageU8& image,
                         ImageU8& output, std::vector<std::string>& notes) const;

    static void require_strips(const Problem& problem);

    // The CPU reference's verdict on `actual`; a failure throws, so nothing is written.
    std::string verify(const Variant& variant, const Problem& problem, const ImageU8& image, const ImageU8& actual,
                       const std::string& output_name, const reference::Progress& progress) const;

    const ApplyOptions& o_;
    const Setup& s_;
    const Variant* requested_;
    int device_index_;
    std::string device_;  // "gpu 0 (NVIDIA H200)"
    autotune::VariantChooser chooser_;
    // The strip pipeline of the last image, reused while the problem stays the same.
    mutable std::unique_ptr<StripPipeline> pipeline_;
    mutable std::string pipeline_key_;
    mutable std::string pipeline_note_;  // its "gpu path:" line
};

}  // namespace klab::cli::apply
