// `klab gen`: writes synthetic test images (harness/synth.hpp), one or the whole standard set.
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "harness/error.hpp"
#include "harness/io/image_io.hpp"
#include "harness/synth.hpp"

namespace klab::cli {
namespace {

struct GenOptions {
    std::string pattern = "natural";
    std::string size = "HD";
    int channels = 0;  // unset: 1 for a .pgm OUT, else 3
    std::string seed = "1";  // parsed by parse_seed: CLI11 versions differ on "-1" for unsigned
    bool all = false;
    std::string out;  // the output file, or with --all the output directory
};

constexpr const char* kDefaultDir = "data/generated";

// A decimal 0..2^64-1; anything else (sign, spaces, overflow) is an error.
std::uint64_t parse_seed(const std::string& text) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
        throw Error(fmt::format("seed '{}'", text), "an integer from 0 to 18446744073709551615");
    }
    return value;
}

void write_one(const GenOptions& o) {
    if (o.out.empty()) {
        throw Error("klab gen needs an output file", "klab gen [options] OUT (e.g. out.png), or klab gen --all [DIR]");
    }
    const synth::Pattern pattern = synth::parse_pattern(o.pattern);
    const synth::Resolution res = synth::parse_resolution(o.size);
    const std::uint64_t seed = parse_seed(o.seed);
    const std::filesystem::path path(o.out);
    const int channels = o.channels != 0 ? o.channels : io::gray_only_extension(path) ? 1 : 3;
    io::check_writable(path, channels);  // refuse a bad path before spending time generating
    const ImageU8 image = synth::generate(pattern, res.width, res.height, channels, seed);
    io::write_image(path, image);
    fmt::print("wrote {} ({} {}x{}x{}, seed {})\n", path.string(), synth::to_string(pattern), res.width,
               res.height, channels, seed);
}

void write_all(const GenOptions& o) {
    const std::uint64_t seed = parse_seed(o.seed);
    const std::filesystem::path dir(o.out.empty() ? kDefaultDir : o.out);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir)) {
        throw Error(fmt::format("cannot create output directory '{}'{}", dir.string(),
                                ec ? ": " + ec.message() : std::string()),
                    "a directory path that can be created and written");
    }
    const auto& patterns = synth::all_patterns();
    const auto& resolutions = synth::named_resolutions();
    const std::size_t total = patterns.size() * resolutions.size();
    std::size_t index = 0;
    for (synth::Pattern pattern : patterns) {
        for (const synth::Resolution& res : resolutions) {
            ++index;
            const std::string name = fmt::format("{}_{}.png", synth::to_string(pattern), res.name);
            // Name first, time when done: the large ones take a moment and the user sees which.
            fmt::print("[{}/{}] {} {}x{} ... ", index, total, name, res.width, res.height);
            std::fflush(stdout);
            const auto start = std::chrono::steady_clock::now();
            const ImageU8 image = synth::generate(pattern, res.width, res.height, 3, seed);
            io::write_image(dir / name, image);
            const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
            fmt::print("{:.1f} s\n", took.count());
            std::fflush(stdout);
        }
    }
}

}  // namespace

void add_gen_command(CLI::App& app) {
    auto options = std::make_shared<GenOptions>();
    CLI::App* gen = app.add_subcommand(
        "gen",
        "Write synthetic test images (deterministic: the same options give the same pixels everywhere)");
    gen->footer(fmt::format(
        "Examples:\n"
        "  klab gen --pattern natural --size HD --channels 3 --seed 1 out.png\n"
        "  klab gen --size 17x13 --pattern noise small.ppm\n"
        "  klab gen --all            (every pattern at every named size, RGB PNG, into {})\n"
        "  klab gen --all /tmp/gen\n"
        "Output format follows OUT's extension: .png, .jpg/.jpeg, .pgm (gray only), .ppm/.pnm.",
        kDefaultDir));

    CLI::Option* pattern = gen->add_option("-p,--pattern", options->pattern,
                                           "gradient, checkerboard, noise or natural");
    pattern->capture_default_str();
    CLI::Option* size = gen->add_option("-s,--size", options->size,
                                        "480p (640x480), 720p (1280x720), HD (1920x1080), 4K (3840x2160), "
                                        "8K (7680x4320), or WxH");
    size->capture_default_str();
    CLI::Option* channels = gen->add_option("-c,--channels", options->channels,
                                            "1 (gray), 3 (RGB) or 4 (RGBA, alpha 255); default 3, 1 for a .pgm OUT");
    channels->check(one_of({1, 3, 4}));
    gen->add_option("--seed", options->seed, "seed for the noise and natural patterns, 0 to 2^64-1")
        ->capture_default_str()
        ->type_name("UINT");
    CLI::Option* all = gen->add_flag(
        "--all", options->all,
        fmt::format("write every pattern at every named size as DIR/<pattern>_<size>.png (RGB); "
                    "DIR is OUT, default {}",
                    kDefaultDir));
    all->excludes(pattern);
    all->excludes(size);
    all->excludes(channels);
    gen->add_option("OUT", options->out, "output image file; with --all, the output directory")->type_name("PATH");

    gen->callback([options] {
        if (options->all) {
            write_all(*options);
        } else {
            write_one(*options);
        }
    });
}

}  // namespace klab::cli
