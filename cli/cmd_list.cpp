// klab list: the registered kernel variants, what each supports (cli/variant_support.hpp: the
// representative problems each variant is asked about) and, per GPU model, what the tuning caches
// under the results directory hold for it, as text or JSON. Needs no GPU.
#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "autotune/gpu_model.hpp"
#include "autotune/problem_class.hpp"
#include "autotune/tuner.hpp"
#include "autotune/tuning_cache.hpp"
#include "cli/commands.hpp"
#include "cli/variant_support.hpp"
#include "harness/error.hpp"
#include "harness/variant.hpp"

namespace klab::cli {

namespace {

using namespace list;

using Json = nlohmann::ordered_json;  // keys in the order written: name first

struct ListOptions {
    bool json = false;
    std::string results = "results";
};

// What the tuning caches hold for one variant on one GPU model: the problem classes it has records
// of (any driver, any occupancy rule), and those of them with no record tuned on this build's
// sources of the variant, which the lookup skips until they are tuned again.
struct TunedOn {
    std::string gpu;  // "NVIDIA H200" (its folder under the results directory: autotune::gpu_slug)
    int classes = 0;
    std::vector<std::string> stale;  // class names, sorted
};

struct TuningRecords {
    bool found = false;  // the results directory exists
    std::map<std::string, std::vector<TunedOn>> by_variant;

    // The entries of one variant (none without records).
    const std::vector<TunedOn>& of(const std::string& variant) const {
        static const std::vector<TunedOn> kNone;
        const auto entries = by_variant.find(variant);
        return entries == by_variant.end() ? kNone : entries->second;
    }
};

// The TunedOn entries of every variant with records under `results`. Unreadable caches are warned
// about (stderr) and skipped, as every other command does.
TuningRecords tuning_records(const std::filesystem::path& results) {
    TuningRecords out;
    std::error_code error;
    out.found = std::filesystem::is_directory(results, error);
    std::vector<std::string> warnings;
    const autotune::TuningCache cache = autotune::TuningCache::load_directory(results, warnings);
    for (const std::string& w : warnings) fmt::print(stderr, "klab list: warning: {}\n", w);
    // variant -> GPU name -> class -> whether a record of it is current
    std::map<std::string, std::map<std::string, std::map<std::string, bool>>> seen;
    for (const autotune::TuningRecord& r : cache.records()) {
        const std::optional<autotune::SourceHashes> hashes = autotune::source_hashes(r.variant);
        bool& current = seen[r.variant][r.gpu.name][autotune::to_string(r.problem_class)];
        current = current || (hashes && hashes->current(r.source_hash));
    }
    for (const auto& [variant, gpus] : seen) {
        for (const auto& [gpu, classes] : gpus) {
            TunedOn t{gpu, static_cast<int>(classes.size()), {}};
            for (const auto& [name, current] : classes) {
                if (!current) t.stale.push_back(name);
            }
            out.by_variant[variant].push_back(t);
        }
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Text

// "32x8", or per group: "32x8 (masks 1x1..7x7, 3x7, 7x3), 32x16 (masks 9x9..15x15)".
std::string default_shapes_text(const Report& r) {
    if (r.default_shapes.empty()) return to_string(r.variant->tuning_space().default_shape) + " (no probed problem supported)";
    if (r.default_shapes.size() == 1) return r.default_shapes.front().first;
    std::vector<std::string> parts;
    for (const auto& [shape, group] : r.default_shapes) parts.push_back(fmt::format("{} ({})", shape, group.text));
    return fmt::format("{}", fmt::join(parts, ", "));
}

std::string parameter_text(const TunableParameter& p) {
    return fmt::format("{} {{{}}} ({})", p.name, fmt::join(p.values, ","), p.meaning);
}

std::string tuning_text(const TuningSpace& space) {
    std::vector<std::string> parameters;
    for (const TunableParameter& p : space.parameters) parameters.push_back(parameter_text(p));
    return fmt::format("block x {} · block y {} · parameters {}", fmt::join(space.block_x, ","),
                       fmt::join(space.block_y, ","), parameters.empty() ? "none" : fmt::format("{}", fmt::join(parameters, "; ")));
}

// "NVIDIA H200: 12 classes, all tuned on this build's sources", the stale classes named, or what it
// means to have none.
std::string tuned_text(const std::vector<TunedOn>& tuned, const std::string& results) {
    if (tuned.empty()) {
        return fmt::format("no record under {} (klab tune on a GPU records one; until then the variant runs with its "
                           "default block)", results);
    }
    std::vector<std::string> parts;
    for (const TunedOn& t : tuned) {
        const std::string classes = fmt::format("{} class{}", t.classes, t.classes == 1 ? "" : "es");
        if (t.stale.empty()) {
            parts.push_back(fmt::format("{}: {}, {} on this build's sources", t.gpu, classes, t.classes == 1 ? "tuned" : "all tuned"));
            continue;
        }
        constexpr std::size_t kNamed = 4;
        const std::size_t named = std::min(t.stale.size(), kNamed);
        const std::vector<std::string> first(t.stale.begin(), t.stale.begin() + static_cast<std::ptrdiff_t>(named));
        const std::string more = t.stale.size() > named ? fmt::format(" and {} more", t.stale.size() - named) : "";
        const bool all = static_cast<int>(t.stale.size()) == t.classes;
        parts.push_back(fmt::format("{}: {}, {} tuned on other sources of the variant, which the lookup skips until they "
                                    "are tuned again on that GPU (klab run, or klab tune --missing-only --class CLASS): {}{}",
                                    t.gpu, classes, all ? "all" : fmt::format("{} of them", t.stale.size()),
                                    fmt::join(first, ", "), more));
    }
    return fmt::format("{}", fmt::join(parts, "; "));
}

void print_report(const Report& r, const std::vector<TunedOn>& tuned, const std::string& results) {
    const Variant& v = *r.variant;
    fmt::print("\n{} ({})\n", v.name(), to_string(v.op()));
    fmt::print("  technique:     {}\n", v.technique());
    fmt::print("  default block: {}\n", default_shapes_text(r));
    fmt::print("  tuning space:  {}\n", tuning_text(v.tuning_space()));
    fmt::print("  tuned:         {}\n", tuned_text(tuned, results));
    if (r.supported_count == 0) {
        fmt::print("  supports:      none of the {} probed problems\n", r.probes.size());
    } else {
        fmt::print("  supports:      {}{}\n", full_text(r.supported),
                   r.refusals.empty() ? "" : fmt::format(" ({} of {} probed problems)", r.supported_count, r.probes.size()));
    }
    for (const auto& [key, group] : r.refusals) {
        const Probe& example = *group.probes.front();
        fmt::print("  not supported: {}: {} ({} problems, e.g. {})\n", group.text, example.support.reason(), group.probes.size(),
                   to_string(example.problem));
    }
}

void print_text(const std::vector<Report>& reports, const TuningRecords& tuned, const std::string& results) {
    if (reports.empty()) {
        fmt::print("no variants are registered in this build (each kernels/<op>_<technique>.cu registers one; "
                   "see README.md, \"Adding a variant\")\n");
        return;
    }
    std::set<Operation> ops;
    for (const Report& r : reports) ops.insert(r.variant->op());
    fmt::print("{} registered variant{}; \"supports\" is what each answers for these problems (device limits are "
               "checked when it runs):\n", reports.size(),
               reports.size() == 1 ? "" : "s");
    for (Operation op : ops) fmt::print("  {}: {}\n", to_string(op), probe_description(op));
    if (tuned.found) {
        fmt::print("\"tuned\" is what {}/*/autotune.json hold for each variant, per GPU model.\n", results);
    } else {
        fmt::print("\"tuned\": no results directory {} (run klab from the repository root, or give --results DIR), "
                   "so no variant has a record.\n", results);
    }
    for (const Report& r : reports) print_report(r, tuned.of(r.variant->name()), results);
}

// ---------------------------------------------------------------------------------------------
// JSON

Json shape_json(const LaunchShape& shape) {
    Json parameters = Json::object();
    for (const auto& [name, value] : shape.parameters) parameters[name] = value;
    return {{"text", to_string(shape)}, {"block_x", shape.block_x}, {"block_y", shape.block_y}, {"parameters", parameters}};
}

Json tuning_json(const TuningSpace& space) {
    Json parameters = Json::array();
    for (const TunableParameter& p : space.parameters) {
        parameters.push_back({{"name", p.name}, {"values", p.values}, {"meaning", p.meaning}});
    }
    return {{"block_x", space.block_x}, {"block_y", space.block_y}, {"parameters", parameters},
            {"default_shape", shape_json(space.default_shape)}};
}

Json dimensions_json(const Dimensions& d) {
    std::vector<std::string> masks;
    for (const auto& m : ordered_masks(d.masks)) masks.push_back(mask_text(m));
    return {{"channels", d.channels}, {"layouts", layout_names(d.layouts)}, {"borders", border_names(d.borders)},
            {"masks", masks}};
}

Json report_json(const Report& r, const std::vector<TunedOn>& tuned) {
    const Variant& v = *r.variant;
    Json tuned_json = Json::array();
    for (const TunedOn& t : tuned) {
        tuned_json.push_back({{"gpu", t.gpu},
                              {"folder", autotune::gpu_slug(t.gpu)},
                              {"classes", t.classes},
                              {"current", t.classes - static_cast<int>(t.stale.size())},
                              {"stale_classes", t.stale}});
    }
    Json defaults = Json::array();
    for (const auto& [shape, group] : r.default_shapes) {
        defaults.push_back({{"shape", shape_json(group.probes.front()->shape)}, {"problems", group.text}});
    }
    Json refusals = Json::array();
    for (const auto& [key, group] : r.refusals) {
        refusals.push_back({{"reason", group.probes.front()->support.reason()}, {"problems", group.text}, {"count", group.probes.size()},
                            {"example", to_string(group.probes.front()->problem)}});
    }
    Json supports = dimensions_json(r.supported);
    supports["probed"] = r.probes.size();
    supports["supported"] = r.supported_count;
    supports["summary"] = r.supported_count == 0 ? std::string("none") : full_text(r.supported);
    return {{"name", v.name()},         {"op", to_string(v.op())},     {"technique", v.technique()},
            {"default_shapes", defaults}, {"tuning_space", tuning_json(v.tuning_space())},
            {"supports", supports},     {"unsupported", refusals},                       {"tuned", tuned_json}};
}

void print_json(const std::vector<Report>& reports, const TuningRecords& tuned, const std::string& results) {
    Json out = {{"variants", Json::array()},
                          {"registry_errors", Registry::instance().errors()},
                          {"probed", Json::object()},
                          {"results", results},
                          {"results_found", tuned.found}};
    std::set<Operation> ops;
    for (const Report& r : reports) {
        out["variants"].push_back(report_json(r, tuned.of(r.variant->name())));
        ops.insert(r.variant->op());
    }
    for (Operation op : ops) out["probed"][to_string(op)] = probe_description(op);
    fmt::print("{}\n", out.dump(2));
}

void run_list(const ListOptions& options) {
    std::vector<Report> reports;
    for (const Variant* v : Registry::instance().all()) reports.push_back(make_report(*v));  // all() is sorted by name
    const TuningRecords tuned = tuning_records(options.results);
    if (options.json) {
        print_json(reports, tuned, options.results);
    } else {
        print_text(reports, tuned, options.results);
    }
    // A refused registration is a build defect (a duplicate or empty name): fail loudly.
    const std::vector<std::string>& errors = Registry::instance().errors();
    if (!errors.empty()) {
        throw Error(fmt::format("{} variant registration{} refused: {}", errors.size(), errors.size() == 1 ? " was" : "s were",
                                fmt::join(errors, "; ")),
                    "one variant per kernels/*.cu file, each with its own non-empty name");
    }
}

}  // namespace

void add_list_command(CLI::App& app) {
    auto options = std::make_shared<ListOptions>();
    CLI::App* cmd = app.add_subcommand("list", "List the registered kernel variants, what each supports and what the tuning caches hold for it");
    cmd->add_flag("--json", options->json, "Print JSON instead of text");
    cmd->add_option("--results", options->results,
                    "Results directory whose tuning caches (<results>/*/autotune.json) the list reports on, per variant and GPU "
                    "model: the classes recorded and those not tuned on this build's sources")
        ->capture_default_str();
    cmd->callback([options] { run_list(*options); });
}

}  // namespace klab::cli
