// klab apply's option checks that need no file and no device, so that a typo costs nothing: each
// says what was wrong and what is allowed (cli/apply_options.hpp).
#include <algorithm>

#include <fmt/format.h>

#include "cli/apply_options.hpp"
#include "harness/error.hpp"
#include "harness/filter_spec.hpp"
#include "harness/io/image_io.hpp"
#include "harness/variant.hpp"

namespace klab::cli::apply {

void check_mode_options(const ApplyOptions& o) {
    if (!o.out_dir.empty()) {
        if (o.paths.empty() && o.list.empty()) {
            throw Error("--out-dir without inputs", "--out-dir DIR INPUT... (image files or directories) and/or --list FILE");
        }
        return;
    }
    if (!o.list.empty()) {
        throw Error(fmt::format("--list {} without --out-dir: a batch writes into a directory", o.list), "--out-dir DIR --list FILE");
    }
    if (!o.format.empty()) {
        throw Error(fmt::format("--format {} without --out-dir: with IN OUT, OUT's extension picks the format", o.format),
                    "--format with --out-dir DIR");
    }
    if (o.paths.size() != 2) {
        throw Error(fmt::format("klab apply takes IN OUT, got {} path{}{}", o.paths.size(), o.paths.size() == 1 ? "" : "s",
                                o.paths.size() == 1 ? " (OUT is missing)" : ""),
                    "IN OUT for one image, or --out-dir DIR INPUT... (image files or directories) for many");
    }
}

void check_cpu_options(const ApplyOptions& o) {
    if (o.variant != "auto") {
        throw Error(fmt::format("--variant {} with --backend cpu: the CPU backend always runs the reference", o.variant),
                    "--variant with --backend gpu only");
    }
    if (!o.block.empty()) {
        throw Error(fmt::format("--block {} with --backend cpu: the CPU reference has no launch shape", o.block),
                    "--block with --backend gpu only");
    }
    if (o.verify) {
        throw Error("--verify with --backend cpu: the CPU backend is the reference itself", "--verify with --backend gpu only");
    }
    if (o.strips_given || o.in_flight_given || o.sync) {
        throw Error(fmt::format("{} with --backend cpu: strips and the synchronous path are the GPU pipeline's",
                                o.strips_given ? "--strips" : o.in_flight_given ? "--in-flight" : "--sync"),
                    "--strips, --in-flight and --sync with --backend gpu only");
    }
    if (!o.device.empty()) {
        throw Error(fmt::format("--device {} with --backend cpu: the CPU backend uses no device", o.device),
                    "--device with --backend gpu only");
    }
}

void check_device_option(const ApplyOptions& o, const DeviceRequest& request) {
    if (request.all && o.out_dir.empty()) {
        throw Error("--device all with IN OUT: one file runs on one GPU",
                    "--device N for one file, or --device all --out-dir DIR INPUT... to spread a batch over the GPUs");
    }
}

void check_pipeline_options(const ApplyOptions& o) {
    if (o.sync && o.strips_given) {
        throw Error(fmt::format("--sync with --strips {}: --sync filters the whole image in one piece, --strips cuts it into strips",
                                o.strips),
                    "one of them");
    }
    if (o.sync && o.in_flight_given) {
        throw Error(fmt::format("--sync with --in-flight {}: the synchronous path holds the whole image, one piece", o.in_flight),
                    "--in-flight without --sync (the strip path)");
    }
}

void check_border_option(const ApplyOptions& o, const FilterSpec& spec) {
    if (o.border_given && spec.operation == Operation::integral) {
        throw Error(fmt::format("--border {} with --filter {}: an integral image's sums read no pixel outside the image, so no "
                                "border applies",
                                o.border, spec.text),
                    "--border with a convolution or sobel");
    }
}

void check_jpeg_quality_option(const ApplyOptions& o, const std::vector<std::filesystem::path>& outputs) {
    if (!o.jpeg_quality_given) return;
    const auto is_jpeg = [](const std::filesystem::path& path) {
        return io::format_from_extension(path) == io::ImageFormat::jpeg;  // the callers checked the extensions
    };
    if (std::any_of(outputs.begin(), outputs.end(), is_jpeg)) return;
    const std::string what = o.out_dir.empty()
                                 ? fmt::format("OUT '{}' is not a JPEG", printable(outputs.front().string()))
                                 : fmt::format("none of the batch's {} output{} is a JPEG", outputs.size(), outputs.size() == 1 ? "" : "s");
    throw Error(fmt::format("--jpeg-quality {}: {}, so it would change nothing", o.jpeg_quality, what),
                o.out_dir.empty() ? "--jpeg-quality with a .jpg or .jpeg OUT"
                                  : "--jpeg-quality with --format jpg or jpeg, or with .jpg or .jpeg inputs");
}

void require_gpu_operation(const FilterSpec& spec) {
    const Operation op = spec.operation;
    if (op == Operation::integral) {
        throw Error(fmt::format("--backend gpu --filter {}: klab apply computes integral images on the CPU only (their sums "
                                "carry across the whole image, so they cannot go through the strip pipeline)",
                                spec.text),
                    "--backend cpu for integral, or --backend gpu with a filter other than integral (klab apply --help lists them)");
    }
    if (Registry::instance().for_op(op).empty()) {
        throw Error(fmt::format("--backend gpu --filter {}: no GPU variant of {} is registered in this build", spec.text,
                                to_string(op)),
                    "--backend cpu");
    }
}

}  // namespace klab::cli::apply
