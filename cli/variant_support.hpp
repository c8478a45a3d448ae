#pragma once
// What a registered variant supports, for `klab list` (cli/cmd_list.cpp). It is not declared
// anywhere as data: it is what supports() and check_shape() answer. So the variant is asked about a
// table of representative problems (every channel count, layout and border, every odd square mask
// and two non-square ones) and the answers are summarised per dimension (cli/variant_support.cpp).
// Neither call touches the device, so this works without a GPU.
#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/variant.hpp"

namespace klab::cli::list {

// One problem and the variant's answer: supported (with the shape it would run) or a reason.
struct Probe {
    Problem problem;
    Support support = Support::yes();
    LaunchShape shape;  // default_shape(problem), when supports() said yes
};

// Summaries of a set of probes, one set of values per dimension.
struct Dimensions {
    std::set<int> channels;
    std::set<Layout> layouts;
    std::set<BorderMode> borders;
    std::set<std::pair<int, int>> masks;  // (width, height); empty for ops without a mask
    bool uses_border = true;              // false for the integral, whose borders are not listed
};

struct Group {
    std::vector<const Probe*> probes;
    std::string text;  // narrowing_text of the group
};

// One variant's report: its probes, their summaries, its default shapes and its refusals, grouped.
struct Report {
    const Variant* variant = nullptr;
    std::vector<Probe> probes;
    Dimensions probed;     // every probed value
    Dimensions supported;  // values of the supported probes
    std::size_t supported_count = 0;
    std::vector<std::pair<std::string, Group>> default_shapes;  // shape text -> problems
    // Reason -> problems; the reasons with each probe's mask named generically ("<mask>", "<size>"):
    // a group's first probe gives the reason as the variant words it.
    std::vector<std::pair<std::string, Group>> refusals;
};

// Asks `variant` about every representative problem of its op.
Report make_report(const Variant& variant);

// "convolve: 64x48 images, channels 1,3,4 · aos,soa · borders all · masks 1x1..31x31, 3x7, 7x3"
std::string probe_description(Operation op);

// Every dimension: "channels 1,3,4 · aos,soa · borders all · masks 1x1..31x31, 3x7, 7x3" (no
// borders for an op that uses none).
std::string full_text(const Dimensions& d);

// "7x3"
std::string mask_text(std::pair<int, int> m);
// Squares by side, then the non-square masks: the order the probes use.
std::vector<std::pair<int, int>> ordered_masks(const std::set<std::pair<int, int>>& masks);
std::vector<std::string> layout_names(const std::set<Layout>& layouts);
std::vector<std::string> border_names(const std::set<BorderMode>& borders);

}  // namespace klab::cli::list
