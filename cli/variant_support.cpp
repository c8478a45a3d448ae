// What a registered variant supports (cli/variant_support.hpp): the representative problems, the
// variant's answer for each, and their summaries per dimension as text.
#include <algorithm>
#include <cctype>
#include <exception>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/variant_support.hpp"

namespace klab::cli::list {

namespace {

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

}  // namespace

std::string mask_text(std::pair<int, int> m) { return fmt::format("{}x{}", m.first, m.second); }

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

namespace {

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

}  // namespace

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

namespace {

std::string borders_text(const std::set<BorderMode>& borders) {
    if (borders.size() == std::size(kProbeBorders)) return "all";
    return fmt::format("{}", fmt::join(border_names(borders), ","));
}

std::string channels_text(const Dimensions& d) { return fmt::format("channels {}", fmt::join(d.channels, ",")); }
std::string layouts_text(const Dimensions& d) { return fmt::format("{}", fmt::join(layout_names(d.layouts), ",")); }

}  // namespace

std::string full_text(const Dimensions& d) {
    std::string text = fmt::format("{} · {}", channels_text(d), layouts_text(d));
    if (d.uses_border) text += " · borders " + borders_text(d.borders);
    if (!d.masks.empty()) text += " · masks " + masks_text(d.masks);
    return text;
}

namespace {

constexpr const char* kEveryProbedProblem = "every probed problem";

// Only the dimensions where `part` covers less than `whole`: "masks 17x17..31x31".
std::string narrowing_text(const Dimensions& part, const Dimensions& whole) {
    std::vector<std::string> texts;
    if (part.channels != whole.channels) texts.push_back(channels_text(part));
    if (part.layouts != whole.layouts) texts.push_back(layouts_text(part));
    if (part.borders != whole.borders) texts.push_back("borders " + borders_text(part.borders));
    if (part.masks != whole.masks) texts.push_back("masks " + masks_text(part.masks));
    if (texts.empty()) return kEveryProbedProblem;
    return fmt::format("{}", fmt::join(texts, " · "));
}

// ---------------------------------------------------------------------------------------------
// One variant's report

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
    for (auto& [key, group] : groups) {
        group.text = narrowing_text(dimensions_of(group.probes), whole);
        // A group whose values span every dimension while another group takes some of its
        // combinations (conv.box_sliding_sums: group=8 for gray boxes up to 25 wide, group=16
        // for the rest) is not "every probed problem".
        if (groups.size() > 1 && group.text == kEveryProbedProblem) group.text = "the other probed problems";
    }
    return groups;
}

// A refusal's reason with the probe's own mask named generically, so that one rule that refuses
// every mask from 11x11 up is one group, not eleven whose reasons differ only by the mask's name.
// Only the first mention of the name, and the first of the size after it, are the probe's own: a
// size elsewhere in the reason is the variant's rule ("conv.register_window takes up to 9x9").
std::string refusal_key(const Probe& p) {
    std::string reason = p.support.reason();
    if (!p.problem.mask || p.problem.mask->name().empty()) return reason;
    const std::string name = p.problem.mask->name();
    const std::size_t at_name = reason.find(name);
    if (at_name == std::string::npos) return reason;
    reason.replace(at_name, name.size(), "<mask>");
    const std::string size = fmt::format("{}x{}", p.problem.mask->width(), p.problem.mask->height());
    const std::size_t at_size = reason.find(size, at_name);
    // The size as a whole token: "1x1" is not the start of "11x11" or the end of "21x1".
    const auto is_digit = [&reason](std::size_t i) { return i < reason.size() && std::isdigit(static_cast<unsigned char>(reason[i])); };
    if (at_size != std::string::npos && !(at_size > 0 && is_digit(at_size - 1)) && !is_digit(at_size + size.size())) {
        reason.replace(at_size, size.size(), "<size>");
    }
    return reason;
}

}  // namespace

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
    r.refusals = group_by(r.probes, r.probed, false, refusal_key);
    return r;
}

std::string probe_description(Operation op) {
    const std::vector<Problem> problems = probe_problems(op);
    std::vector<Probe> probes;
    for (const Problem& p : problems) probes.push_back({p, Support::yes(), {}});
    std::vector<const Probe*> all;
    for (const Probe& p : probes) all.push_back(&p);
    return fmt::format("{}x{} images, {}", kProbeWidth, kProbeHeight, full_text(dimensions_of(all)));
}

}  // namespace klab::cli::list
