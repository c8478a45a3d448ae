// klab list: the registered kernel variants and what each supports (cli/variant_support.hpp: the
// representative problems each variant is asked about), as text or JSON.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

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
};

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

void print_report(const Report& r) {
    const Variant& v = *r.variant;
    fmt::print("\n{} ({})\n", v.name(), to_string(v.op()));
    fmt::print("  technique:     {}\n", v.technique());
    fmt::print("  default block: {}\n", default_shapes_text(r));
    fmt::print("  tuning space:  {}\n", tuning_text(v.tuning_space()));
    if (r.supported_count == 0) {
        fmt::print("  supports:      none of the {} probed problems\n", r.probes.size());
    } else {
        fmt::print("  supports:      {}{}\n", full_text(r.supported),
                   r.refusals.empty() ? "" : fmt::format(" ({} of {} probed problems)", r.supported_count, r.probes.size()));
    }
    for (const auto& [reason, group] : r.refusals) {
        fmt::print("  not supported: {}: {} ({} problems, e.g. {})\n", group.text, reason, group.probes.size(),
                   to_string(group.probes.front()->problem));
    }
}

void print_text(const std::vector<Report>& reports) {
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
    for (const Report& r : reports) print_report(r);
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

Json report_json(const Report& r) {
    const Variant& v = *r.variant;
    Json defaults = Json::array();
    for (const auto& [shape, group] : r.default_shapes) {
        defaults.push_back({{"shape", shape_json(group.probes.front()->shape)}, {"problems", group.text}});
    }
    Json refusals = Json::array();
    for (const auto& [reason, group] : r.refusals) {
        refusals.push_back({{"reason", reason}, {"problems", group.text}, {"count", group.probes.size()},
                            {"example", to_string(group.probes.front()->problem)}});
    }
    Json supports = dimensions_json(r.supported);
    supports["probed"] = r.probes.size();
    supports["supported"] = r.supported_count;
    supports["summary"] = r.supported_count == 0 ? std::string("none") : full_text(r.supported);
    return {{"name", v.name()},         {"op", to_string(v.op())},     {"technique", v.technique()},
            {"default_shapes", defaults}, {"tuning_space", tuning_json(v.tuning_space())},
            {"supports", supports},     {"unsupported", refusals}};
}

void print_json(const std::vector<Report>& reports) {
    Json out = {{"variants", Json::array()},
                          {"registry_errors", Registry::instance().errors()},
                          {"probed", Json::object()}};
    std::set<Operation> ops;
    for (const Report& r : reports) {
        out["variants"].push_back(report_json(r));
        ops.insert(r.variant->op());
    }
    for (Operation op : ops) out["probed"][to_string(op)] = probe_description(op);
    fmt::print("{}\n", out.dump(2));
}

void run_list(const ListOptions& options) {
    std::vector<Report> reports;
    for (const Variant* v : Registry::instance().all()) reports.push_back(make_report(*v));  // all() is sorted by name
    if (options.json) {
        print_json(reports);
    } else {
        print_text(reports);
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
    CLI::App* cmd = app.add_subcommand("list", "List the registered kernel variants and what each supports");
    cmd->add_flag("--json", options->json, "Print JSON instead of text");
    cmd->callback([options] { run_list(*options); });
}

}  // namespace klab::cli
