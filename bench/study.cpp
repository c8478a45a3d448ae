#include "bench/study.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "bench/bench_json.hpp"
#include "harness/error.hpp"
#include "harness/reference/reference.hpp"
#include "harness/synth.hpp"

namespace klab::bench {

namespace {

const Border kReplicate{BorderMode::replicate, 0};

ImageShape shape_of(const std::string& size, int channels, Layout layout) {
    const synth::Resolution r = synth::parse_resolution(size);
    return ImageShape{r.width, r.height, channels, layout};
}

Problem gaussian(const std::string& size, int k, Layout layout = Layout::aos) {
    return convolve_problem(shape_of(size, 3, layout), masks::gaussian(k), kReplicate);
}

Problem op_problem(Operation op, const std::string& size, int channels, Border border) {
    Problem p;
    p.op = op;
    p.shape = shape_of(size, channels, Layout::aos);
    p.border = border;
    return p;
}

// Appends every registered variant of the problem's op that supports it.
void add_variants(std::vector<BenchCase>& cases, const std::string& size, const Problem& problem) {
    for (const Variant* v : Registry::instance().for_op(problem.op)) {
        if (!v->supports(problem)) continue;  // e.g. conv.box_integral on a Gaussian mask
        cases.push_back({RowKind::variant, v->name(), size, problem, v, std::nullopt});
    }
}

void add_row(std::vector<BenchCase>& cases, RowKind kind, const std::string& row, const std::string& size,
             const Problem& problem) {
    cases.push_back({kind, row, size, problem, nullptr, std::nullopt});
}

// The end-to-end rows of one size: the link's floors (the image's bytes up alone, down alone, and
// both at once, pinned), then the synchronous one-shot path and the strip pipeline, each from
// pinned and from pageable memory; with `strip_sweep`, the pinned pipeline at fixed strip counts
// too ("e2e.pipelined.strips12").
void add_end_to_end(std::vector<BenchCase>& cases, const std::string& size, bool strip_sweep) {
    const Problem p = gaussian(size, 5);
    for (const char* row : {"e2e.upload", "e2e.download", "e2e.bidirectional", "e2e.one_shot", "e2e.one_shot.pageable",
                            "e2e.pipelined", "e2e.pipelined.pageable"}) {
        add_row(cases, RowKind::end_to_end, row, size, p);
    }
    if (!strip_sweep) return;
    for (int strips : {6, 12, 24, 48}) add_row(cases, RowKind::end_to_end, fmt::format("e2e.pipelined.strips{}", strips), size, p);
}

}  // namespace

Study parse_study(std::string_view text) {
    if (text == "smoke") return Study::smoke;
    if (text == "quick") return Study::quick;
    if (text == "full") return Study::full;
    throw Error(fmt::format("study '{}'", text), "full (the seeds' study), quick (HD and 8K, and the integral images at 4K and 4096x4096) or smoke (tiny images)");
}

const char* to_string(Study study) {
    switch (study) {
        case Study::smoke: return "smoke";
        case Study::quick: return "quick";
        case Study::full: return "full";
    }
    return "?";
}

std::string format_name(const ImageShape& shape) {
    if (shape.channels == 1) return "gray";
    const char* channels = shape.channels == 3 ? "rgb" : shape.channels == 4 ? "rgba" : "c?";
    return fmt::format("{}.{}", channels, shape.layout == Layout::aos ? "aos" : "soa");
}

std::string filter_name(const Problem& problem) {
    switch (problem.op) {
        case Operation::sobel: return "sobel";
        case Operation::integral: return "integral";
        case Operation::convolve: break;
    }
    // Mask names are "gauss5", "box9", "sharpen", ...: the name's part without punctuation.
    std::string name = problem.mask ? problem.mask->name() : "mask";
    for (char& ch : name) {
        if (ch == '/' || ch == ' ' || ch == ':') ch = '_';
    }
    return name;
}

std::string BenchCase::name() const {
    BenchName n;
    n.row = row;
    n.size = size;
    n.format = format_name(problem.shape);
    const bool copy = kind == RowKind::copy || is_link_row(row);  // rows that copy bytes, filtering nothing
    n.filter = copy ? "copy" : filter_name(problem);
    n.border = (copy || problem.op == Operation::integral) ? "none" : to_string(problem.border);
    if (forced_shape) n.block = fmt::format("{}x{}", forced_shape->block_x, forced_shape->block_y);
    return n.text();
}

Traffic minimum_traffic(const Problem& problem) {
    const double elements = static_cast<double>(problem.shape.pixels()) * problem.shape.channels;
    switch (problem.op) {
        case Operation::convolve: return {elements, elements};
        case Operation::sobel: return {elements, static_cast<double>(problem.shape.pixels())};
        case Operation::integral: {
            const bool wide = reference::integral_type(problem.shape.width, problem.shape.height) == reference::IntegralType::u64;
            return {elements, elements * (wide ? 8.0 : 4.0)};
        }
    }
    return {};
}

std::vector<BenchCase> gpu_study(Study study, bool with_npp, ShapeLister block_study_shapes) {
    std::vector<BenchCase> cases;
    const auto npp = [&](const std::string& row, const std::string& size, const Problem& p) {
        if (with_npp) add_row(cases, RowKind::npp, row, size, p);
    };
    const auto convolution_rows = [&](const std::string& size, const Problem& p) {
        add_variants(cases, size, p);
        if (const std::string family = npp_family(filter_name(p)); !family.empty()) npp(family, size, p);
    };

    if (study == Study::smoke) {
        const std::string size = "480p";
        add_row(cases, RowKind::copy, "baseline.copy", size, gaussian(size, 3));
        convolution_rows(size, gaussian(size, 3));
        convolution_rows(size, convolve_problem(shape_of(size, 3, Layout::aos), masks::box(5), kReplicate));
        convolution_rows(size, convolve_problem(shape_of(size, 3, Layout::aos), masks::sharpen(), kReplicate));
        const Problem sobel = op_problem(Operation::sobel, size, 3, kReplicate);
        add_variants(cases, size, sobel);
        npp("npp.sobel", size, op_problem(Operation::sobel, size, 1, kReplicate));
        const Problem integral = op_problem(Operation::integral, size, 1, Border{});
        add_variants(cases, size, integral);
        npp("npp.integral", size, integral);
        add_end_to_end(cases, size, false);
        return cases;
    }

    const std::vector<std::string> sizes =
        study == Study::full ? std::vector<std::string>{"480p", "720p", "HD", "4K", "8K"} : std::vector<std::string>{"HD", "8K"};
    const std::vector<int> more_masks = study == Study::full ? std::vector<int>{5, 7, 9} : std::vector<int>{9};

    // 1. By resolution, Gaussian 3x3 (seed 000, table 1), with each size's copy floor.
    for (const std::string& size : sizes) {
        add_row(cases, RowKind::copy, "baseline.copy", size, gaussian(size, 3));
        convolution_rows(size, gaussian(size, 3));
    }
    // 2. By mask size at HD and 8K (seed 000, table 2; seed 002). 3. The memory levels are the
    // conv.global / constant / tiled_2batch / halo_tiled rows of these tables.
    for (const std::string& size : {std::string("HD"), std::string("8K")}) {
        for (int k : more_masks) convolution_rows(size, gaussian(size, k));
    }
    // 2b. General (not separable) masks (issue 14): sharpen 3x3 and a fixed random 9x9 at HD and
    // 8K, with npp.filter32f; at 8K in SoA as well.
    for (const std::string& size : {std::string("HD"), std::string("8K")}) {
        for (const Mask& mask : {masks::sharpen(), masks::random(9)}) {
            convolution_rows(size, convolve_problem(shape_of(size, 3, Layout::aos), mask, kReplicate));
        }
    }
    for (const Mask& mask : {masks::sharpen(), masks::random(9)}) {
        add_variants(cases, "8K", convolve_problem(shape_of("8K", 3, Layout::soa), mask, kReplicate));
    }
    // 4. AoS against SoA: the same problems in planar layout.
    for (const std::string& size : {std::string("HD"), std::string("8K")}) {
        for (int k : {3, 9}) add_variants(cases, size, gaussian(size, k, Layout::soa));
    }
    // 6. The other operations at 8K: separable 9x9 against NPP's other filters; box filters of three
    // sizes (running sums cost the same for each); Sobel (RGB and gray, HD as well); the integral image, gray
    // (8K needs u64; 4K and 4096x4096, near the largest u32 size, are u32) and RGB.
    npp("npp.filter32f", "8K", gaussian("8K", 9));
    npp("npp.separable32f", "8K", gaussian("8K", 9));
    for (int k : {3, 9, 31}) convolution_rows("8K", convolve_problem(shape_of("8K", 3, Layout::aos), masks::box(k), kReplicate));
    // Sobel at HD too: a row whose width is no multiple of a warp's pixels meets the paths of
    // sobel.register_window's last warp, which the 8K rows never take.
    for (const std::string& size : {std::string("HD"), std::string("8K")}) {
        add_variants(cases, size, op_problem(Operation::sobel, size, 3, kReplicate));
        const Problem gray_sobel = op_problem(Operation::sobel, size, 1, kReplicate);
        add_variants(cases, size, gray_sobel);
        npp("npp.sobel", size, gray_sobel);
    }
    add_row(cases, RowKind::copy, "baseline.copy", "8K", op_problem(Operation::integral, "8K", 1, Border{}));
    for (const std::string& size : {std::string("8K"), std::string("4K"), std::string("4096x4096")}) {
        const Problem integral = op_problem(Operation::integral, size, 1, Border{});
        add_variants(cases, size, integral);
        npp("npp.integral", size, integral);
    }
    add_variants(cases, "8K", op_problem(Operation::integral, "8K", 3, Border{}));  // NPP's integral is gray only
    // 6b. End to end, host to device to host (seed 000; issue 7): 8K RGB Gaussian 5x5.
    add_end_to_end(cases, "8K", study == Study::full);
    // 5. Block shapes (seed 001, table 2): every 100%-occupancy shape of one variant.
    if (study == Study::full && block_study_shapes != nullptr) {
        const Variant& v = Registry::instance().get(kBlockStudyVariant);
        const Problem p = gaussian("8K", 5);
        for (const LaunchShape& shape : block_study_shapes(v, p)) {
            cases.push_back({RowKind::variant, v.name(), "8K", p, &v, shape});
        }
    }
    return cases;
}

std::vector<autotune::ProblemClass> tuned_classes(Study study) {
    std::vector<autotune::ProblemClass> classes;
    for (const BenchCase& c : gpu_study(study, false, nullptr)) {
        if (c.kind != RowKind::variant) continue;
        const autotune::ProblemClass pc = autotune::problem_class(c.problem);
        if (std::find(classes.begin(), classes.end(), pc) == classes.end()) classes.push_back(pc);
    }
    return classes;
}

std::vector<BenchCase> cpu_study(Study study) {
    std::vector<BenchCase> cases;
    const auto both = [&](const std::string& size, const Problem& p) {
        add_row(cases, RowKind::cpu_sequential, "cpu.reference", size, p);
        add_row(cases, RowKind::cpu_parallel, "cpu.reference_mt", size, p);
    };
    if (study == Study::smoke) {
        both("480p", gaussian("480p", 3));
        return cases;
    }
    const std::vector<std::string> sizes = study == Study::full ? std::vector<std::string>{"480p", "720p", "HD", "4K"}
                                                                : std::vector<std::string>{"HD"};
    for (const std::string& size : sizes) both(size, gaussian(size, 3));
    for (int k : {5, 7, 9}) both("HD", gaussian("HD", k));
    both("HD", op_problem(Operation::sobel, "HD", 3, kReplicate));
    both("HD", op_problem(Operation::integral, "HD", 1, Border{}));
    return cases;
}

}  // namespace klab::bench
