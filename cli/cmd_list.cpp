// klab list: the registered kernel variants and what each supports.
//
// What a variant supports is not declared anywhere as data: it is what supports() and
// check_shape() answer. So `klab list` asks them about a table of representative problems
// (every channel count, layout and border, every odd square mask and two non-square ones) and
// summarises the answers. Neither call touches the device, so this works without a GPU.
#include <algorithm>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "harness/error.hpp"
#include "harness/variant.hpp"

namespace klab::cli {

namespace {

using Json = nlohmann::ordered_json;  // keys in the order written: name first

struct ListOptions {
    bool json = false;
};

// ---------------------------------------------------------------------------------------------
// The representative problems

constexpr int kProbeWidth = 64;
constexpr int kProbeHeight = 48;
const int kProbeChannels[] = {1, 3, 4};
const Layout kProbeLayouts[] = {Layout::aos, Layout::soa};
const BorderMode kProbeBorders[] = {BorderMode::constant, BorderMode::replicate, BorderMode::mirror,
                                    BorderMode::reflect, BorderMode::wrap};

// Box masks: every odd square side, then a wide and a tall one (variants may treat x and y apart),
// one mask that is no box, a 3x3 Gaussian, so that box-only variants show their refusal, and one
// that is no outer product (rank 1), sharpen, so that separable variants show theirs.
std::vector<Mask> probe_masks() {
    std::vector<Mask> masks;
    for (int side = 1; side <= Mask::kMaxSide; side += 2) masks.push_back(masks::box(side));
    for (const auto& [w, h] : {std::pair{7, 3}, std::pair{3, 7}}) {
        masks.emplace_back(w, h, std::vector<float>(static_cast<std::size_t>(w * h), 1.0f / static_cast<float>(w * h)),
                           fmt::format("box{}x{}", w, h));
    }
    masks.push_back(masks::gaussian(3));
    masks.push_back(masks::sharpen());
    return masks;
}

// The integral image reads no pixel outside the image: it is probed with one border only, and
// its listing names no borders.
bool uses_border(Operation op) { return op != Operation::integral; }

std::vector<Problem> probe_problems(Operation op) {
    const std::vector<Mask> masks = probe_masks();
    std::vector<Problem> problems;
    for (int channels : kProbeChannels) {
        for (Layout layout : kProbeLayouts) {
            for (BorderMode mode : kProbeBorders) {
                if (!uses_border(op) && mode != BorderMode::replicate) continue;
                Problem base;
                base.op = op;
                base.shape = {kProbeWidth, kProbeHeight, channels, layout};
                base.border = {mode, 0};
                if (op != Operation::convolve) {
                    problems.push_back(base);
                    continue;
                }
                for (const Mask& mask : masks) {
                    base.mask = mask;
                    problems.push_back(base);
                }
            }
        }
    }
    return problems;
}

// One problem and the variant's answer: supported (with the shape it would run) or a reason.
struct Probe {
    Problem problem;
    Support support = Support::yes();
    LaunchShape shape;  // default_shape(problem), when supports() said yes
};

Probe probe(const Variant& variant, const Problem& problem) {
    Probe p{problem, Support::yes(), {}};
    try {
        p.support = variant.supports(problem);
        if (!p.support) return p;
        p.shape = variant.default_shape(problem);
        if (const Support s = variant.check_shape(problem, p.shape); !s) {
            p.support = Support::no(fmt::format("its default block {} is refused: {}", to_string(p.shape), s.reason()));
        }
    } catch (const std::exception& e) {  // a variant that throws is reported, not fatal for the list
        p.support = Support::no(fmt::format("supports() threw: {}", e.what()));
    }
    return p;
}

// ---------------------------------------------------------------------------------------------
// Summaries of a set of probes, one set of values per dimension

struct Dimensions {
    std::set<int> channels;
    std::set<Layout> layouts;
    std::set<BorderMode> borders;
    std::set<std::pair<int, int>> masks;  // (width, height); empty for ops without a mask
    bool uses_border = true;              // false for the integral, whose borders are not listed
};

Dimensions dimensions_of(const std::vector<const Probe*>& probes) {
    Dimensions d;
    for (const Probe* p : probes) {
        d.channels.insert(p->problem.shape.channels);
        d.layouts.insert(p->problem.shape.layout);
        d.borders.insert(p->problem.border.mode);
        if (p->problem.mask) d.masks.emplace(p->problem.mask->width(), p->problem.mask->height());
        d.uses_border = uses_border(p->problem.op);
    }
    return d;
}

std::string mask_text(std::pair<int, int> m) { return fmt::format("{}x{}", m.first, m.second); }

// Squares by side, then the non-square masks: the order the probes use.
std::vector<std::pair<int, int>> ordered_masks(const std::set<std::pair<int, int>>& masks) {
    std::vector<std::pair<int, int>> ordered;
    for (const auto& m : masks) {
        if (m.first == m.second) ordered.push_back(m);
    }
    for (const auto& m : masks) {
        if (m.first != m.second) ordered.push_back(m);
    }
    return ordered;
}

// "1x1..31x31, 3x7, 7x3": runs of three or more odd square sides as ranges, the rest listed.
std::string masks_text(const std::set<std::pair<int, int>>& masks) {
    const std::vector<std::pair<int, int>> m = ordered_masks(masks);
    const auto square_run_continues = [&](std::size_t j) {
        return j + 1 < m.size() && m[j].first == m[j].second && m[j + 1].first == m[j + 1].second &&
               m[j + 1].first == m[j].first + 2;
    };
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < m.size();) {
        std::size_t j = i;
        while (square_run_continues(j)) ++j;
        if (j >= i + 2) {
            parts.push_back(fmt::format("{}..{}", mask_text(m[i]), mask_text(m[j])));
        } else {
            for (std::size_t k = i; k <= j; ++k) parts.push_back(mask_text(m[k]));
        }
        i = j + 1;
    }
    return fmt::format("{}", fmt::join(parts, ", "));
}

std::vector<std::string> layout_names(const std::set<Layout>& layouts) {
    std::vector<std::string> names;
    for (Layout l : layouts) names.emplace_back(to_string(l));
    return names;
}

std::vector<std::string> border_names(const std::set<BorderMode>& borders) {
    std::vector<std::string> names;
    for (BorderMode b : borders) names.emplace_back(to_string(b));
    return names;
}

std::string borders_text(const std::set<BorderMode>& borders) {
    if (borders.size() == std::size(kProbeBorders)) return "all";
    return fmt::format("{}", fmt::join(border_names(borders), ","));
}

std::string channels_text(const Dimensions& d) { return fmt::format("channels {}", fmt::join(d.channels, ",")); }
std::string layouts_text(const Dimensions& d) { return fmt::format("{}", fmt::join(layout_names(d.layouts), ",")); }

// Every dimension: "channels 1,3,4 · aos,soa · borders all · masks 1x1..31x31, 3x7, 7x3" (no
// borders for an op that uses none).
std::string full_text(const Dimensions& d) {
    std::string text = fmt::format("{} · {}", channels_text(d), layouts_text(d));
    if (d.uses_border) text += " · borders " + borders_text(d.borders);
    if (!d.masks.empty()) text += " · masks " + masks_text(d.masks);
    return text;
}

// Only the dimensions where `part` covers less than `whole`: "masks 17x17..31x31".
std::string narrowing_text(const Dimensions& part, const Dimensions& whole) {
    std::vector<std::string> texts;
    if (part.channels != whole.channels) texts.push_back(channels_text(part));
    if (part.layouts != whole.layouts) texts.push_back(layouts_text(part));
    if (part.borders != whole.borders) texts.push_back("borders " + borders_text(part.borders));
    if (part.masks != whole.masks) texts.push_back("masks " + masks_text(part.masks));
    if (texts.empty()) return "every probed problem";
    return fmt::format("{}", fmt::join(texts, " · "));
}

// ---------------------------------------------------------------------------------------------
// One variant's report

struct Group {
    std::vector<const Probe*> probes;
    std::string text;  // narrowing_text of the group
};

// Probes grouped by a key, in first-seen order, each group described against all probes.
template <class KeyOf>
std::vector<std::pair<std::string, Group>> group_by(const std::vector<Probe>& probes, const Dimensions& whole,
                                                    bool supported, KeyOf key_of) {
    std::vector<std::pair<std::string, Group>> groups;
    for (const Probe& p : probes) {
        if (static_cast<bool>(p.support) != supported) continue;
        const std::string key = key_of(p);
        auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
        if (it == groups.end()) it = groups.insert(groups.end(), std::pair<std::string, Group>{key, Group{}});
        it->second.probes.push_back(&p);
    }
    for (auto& [key, group] : groups) group.text = narrowing_text(dimensions_of(group.probes), whole);
    return groups;
}

struct Report {
    const Variant* variant = nullptr;
    std::vector<Probe> probes;
    Dimensions probed;     // every probed value
    Dimensions supported;  // values of the supported probes
    std::size_t supported_count = 0;
    std::vector<std::pair<std::string, Group>> default_shapes;  // shape text -> problems
    std::vector<std::pair<std::string, Group>> refusals;        // reason -> problems
};

Report make_report(const Variant& variant) {
    Report r;
    r.variant = &variant;
    for (const Problem& problem : probe_problems(variant.op())) r.probes.push_back(probe(variant, problem));
    std::vector<const Probe*> all;
    std::vector<const Probe*> yes;
    for (const Probe& p : r.probes) {
        all.push_back(&p);
        if (p.support) yes.push_back(&p);
    }
    r.probed = dimensions_of(all);
    r.supported = dimensions_of(yes);
    r.supported_count = yes.size();
    r.default_shapes = group_by(r.probes, r.probed, true, [](const Probe& p) { return to_string(p.shape); });
    r.refusals = group_by(r.probes, r.probed, false, [](const Probe& p) { return p.support.reason(); });
    return r;
}

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

// "convolve: 64x48 images, channels 1,3,4 · aos,soa · borders all · masks 1x1..31x31, 3x7, 7x3"
std::string probe_description(Operation op) {
    const std::vector<Problem> problems = probe_problems(op);
    std::vector<Probe> probes;
    for (const Problem& p : problems) probes.push_back({p, Support::yes(), {}});
    std::vector<const Probe*> all;
    for (const Probe& p : probes) all.push_back(&p);
    return fmt::format("{}x{} images, {}", kProbeWidth, kProbeHeight, full_text(dimensions_of(all)));
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
