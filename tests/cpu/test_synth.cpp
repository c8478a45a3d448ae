// The synthetic image generator: determinism, pattern properties, parsers.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#include "harness/synth.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

using synth::Pattern;

// FNV-1a (64-bit) over the pixel bytes: a fingerprint that is easy to recompute anywhere.
std::uint64_t fnv1a(const ImageU8& image) {
    std::uint64_t h = 0xCBF29CE484222325ULL;
    const std::uint8_t* p = image.data();
    for (std::size_t i = 0; i < image.size_bytes(); ++i) {
        h ^= p[i];
        h *= 0x100000001B3ULL;
    }
    return h;
}

TEST(SynthDeterminism, SameArgumentsGiveTheSameImage) {
    for (Pattern p : synth::all_patterns()) {
        const ImageU8 a = synth::generate(p, 61, 37, 3, 42);
        const ImageU8 b = synth::generate(p, 61, 37, 3, 42);
        EXPECT_TRUE(same_pixels(a, b)) << synth::to_string(p);
    }
}

TEST(SynthDeterminism, DifferentSeedsGiveDifferentImages) {
    for (Pattern p : {Pattern::noise, Pattern::natural}) {
        const ImageU8 a = synth::generate(p, 64, 48, 3, 1);
        const ImageU8 b = synth::generate(p, 64, 48, 3, 2);
        EXPECT_FALSE(same_pixels(a, b)) << synth::to_string(p);
    }
}

TEST(SynthDeterminism, ThreadCountDoesNotChangeTheImage) {
    for (Pattern p : synth::all_patterns()) {
        const ImageU8 one = synth::generate(p, 203, 157, 3, 9, 1);
        for (unsigned threads : {0u, 2u, 3u, 7u}) {
            EXPECT_TRUE(same_pixels(one, synth::generate(p, 203, 157, 3, 9, threads)))
                << synth::to_string(p) << " with " << threads << " threads";
        }
    }
}

TEST(SynthPatterns, CheckerboardHasKnownValuesAtKnownPixels) {
    // 64x48: the square side is 48 / 16 = 3 pixels; the square holding (0,0) is colour A.
    EXPECT_EQ(synth::checker_square_side(64, 48), 3);
    EXPECT_EQ(synth::checker_square_side(17, 13), 1);
    const ImageU8 rgb = synth::generate(Pattern::checkerboard, 64, 48, 3);
    struct Probe {
        int x, y;
        bool a;
    };
    for (const Probe& probe : {Probe{0, 0, true}, Probe{2, 2, true}, Probe{3, 0, false}, Probe{0, 3, false},
                               Probe{3, 3, true}, Probe{5, 2, false}, Probe{63, 47, true}, Probe{62, 47, false},
                               Probe{60, 44, true}}) {
        const std::uint8_t* want = probe.a ? synth::kCheckerA : synth::kCheckerB;
        for (int c = 0; c < 3; ++c) {
            EXPECT_EQ(rgb.at(probe.x, probe.y, c), want[c]) << "(" << probe.x << "," << probe.y << ") channel " << c;
        }
    }
    const ImageU8 gray = synth::generate(Pattern::checkerboard, 64, 48, 1);
    EXPECT_EQ(gray.at(0, 0, 0), synth::kCheckerAGray);
    EXPECT_EQ(gray.at(3, 0, 0), synth::kCheckerBGray);
    const ImageU8 rgba = synth::generate(Pattern::checkerboard, 64, 48, 4);
    EXPECT_EQ(rgba.at(3, 0, 2), synth::kCheckerB[2]);
    EXPECT_EQ(rgba.at(3, 0, 3), 255);
}

TEST(SynthPatterns, GradientIsMonotoneAlongItsAxis) {
    const int w = 50, h = 30;
    const ImageU8 image = synth::generate(Pattern::gradient, w, h, 3);
    for (int y = 0; y < h; ++y) {
        EXPECT_EQ(image.at(0, y, 0), 0);
        EXPECT_EQ(image.at(w - 1, y, 0), 255);
        for (int x = 1; x < w; ++x) {
            EXPECT_LT(image.at(x - 1, y, 0), image.at(x, y, 0)) << "channel 0 (horizontal) at " << x << "," << y;
            EXPECT_EQ(image.at(x, y, 1), image.at(x - 1, y, 1)) << "channel 1 is constant along x";
        }
    }
    for (int x = 0; x < w; ++x) {
        EXPECT_EQ(image.at(x, 0, 1), 0);
        EXPECT_EQ(image.at(x, h - 1, 1), 255);
        for (int y = 1; y < h; ++y) {
            EXPECT_LT(image.at(x, y - 1, 1), image.at(x, y, 1)) << "channel 1 (vertical) at " << x << "," << y;
            EXPECT_EQ(image.at(x, y, 0), image.at(x, y - 1, 0)) << "channel 0 is constant along y";
            EXPECT_LE(image.at(x, y - 1, 2), image.at(x, y, 2)) << "channel 2 (diagonal) along y";
        }
    }
    EXPECT_EQ(image.at(0, 0, 2), 0);
    EXPECT_EQ(image.at(w - 1, h - 1, 2), 255);
    // Gray keeps the horizontal ramp.
    const ImageU8 gray = synth::generate(Pattern::gradient, w, h, 1);
    for (int x = 0; x < w; ++x) EXPECT_EQ(gray.at(x, 5, 0), image.at(x, 5, 0));
}

TEST(SynthPatterns, NoiseCoversTheRangeEvenly) {
    const ImageU8 image = synth::generate(Pattern::noise, 256, 256, 3, 5);
    std::uint64_t counts[256] = {};
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < image.size_bytes(); ++i) {
        ++counts[image.data()[i]];
        sum += image.data()[i];
    }
    const double mean = static_cast<double>(sum) / static_cast<double>(image.size_bytes());
    EXPECT_NEAR(mean, 127.5, 1.0);
    // 768 expected per value; a fair generator stays far inside these bounds.
    for (int v = 0; v < 256; ++v) {
        EXPECT_GT(counts[v], 600u) << "value " << v;
        EXPECT_LT(counts[v], 940u) << "value " << v;
    }
}

TEST(SynthPatterns, NaturalHasSmoothRegionsAndSharpEdges) {
    const ImageU8 image = synth::generate(Pattern::natural, 320, 240, 1, 3);
    int smooth = 0, sharp = 0, total = 0;
    for (int y = 0; y < image.height(); ++y) {
        for (int x = 1; x < image.width(); ++x) {
            const int d = std::abs(image.at(x, y, 0) - image.at(x - 1, y, 0));
            smooth += d <= 12;
            sharp += d >= 40;
            ++total;
        }
    }
    EXPECT_GT(smooth, total * 8 / 10) << "most neighbours differ only by grain";
    EXPECT_GT(sharp, 50) << "shape boundaries give hard edges";
}

TEST(SynthPatterns, EveryPatternHasTheRequestedShape) {
    for (Pattern p : synth::all_patterns()) {
        for (int channels : {1, 3, 4}) {
            for (auto [w, h] : {std::pair{17, 13}, std::pair{1, 1}, std::pair{1, 9}, std::pair{9, 1}}) {
                const ImageU8 image = synth::generate(p, w, h, channels, 3);
                EXPECT_EQ(image.shape(), (ImageShape{w, h, channels, Layout::aos})) << synth::to_string(p);
                EXPECT_EQ(image.pitch_bytes(), static_cast<std::size_t>(w * channels));
                if (channels == 4) {
                    for (int y = 0; y < h; ++y)
                        for (int x = 0; x < w; ++x) ASSERT_EQ(image.at(x, y, 3), 255) << synth::to_string(p);
                }
            }
        }
    }
}

TEST(SynthPatterns, GenerateRejectsBadArguments) {
    test::expect_error([] { synth::generate(Pattern::natural, 0, 5, 3); }, "synthetic image size 0x5");
    test::expect_error([] { synth::generate(Pattern::noise, 5, 70000, 3); }, "width and height from 1 to 65536");
    test::expect_error([] { synth::generate(Pattern::noise, 5, 5, 2); },
                       "2 channels; allowed: 1 (gray), 3 (RGB), 4 (RGBA)");
}

TEST(SynthParse, PatternNamesRoundTrip) {
    for (Pattern p : synth::all_patterns()) EXPECT_EQ(synth::parse_pattern(synth::to_string(p)), p);
    EXPECT_EQ(synth::all_patterns().size(), 4u);
    test::expect_error([] { synth::parse_pattern("perlin"); },
                       "unknown pattern 'perlin'; allowed: gradient, checkerboard, noise, natural");
    test::expect_error([] { synth::parse_pattern(""); }, "unknown pattern ''");
}

TEST(SynthParse, ResolutionAcceptsNamesAndWxH) {
    const auto& named = synth::named_resolutions();
    ASSERT_EQ(named.size(), 5u);
    for (const synth::Resolution& r : named) {
        const synth::Resolution parsed = synth::parse_resolution(r.name);
        EXPECT_EQ(parsed.name, r.name);
        EXPECT_EQ(parsed.width, r.width);
        EXPECT_EQ(parsed.height, r.height);
    }
    EXPECT_EQ(synth::parse_resolution("hd").width, 1920);
    EXPECT_EQ(synth::parse_resolution("4k").height, 2160);
    EXPECT_EQ(synth::parse_resolution("480P").width, 640);
    EXPECT_EQ(synth::parse_resolution("8k").name, "8K");
    const synth::Resolution small = synth::parse_resolution("17x13");
    EXPECT_EQ(small.name, "17x13");
    EXPECT_EQ(small.width, 17);
    EXPECT_EQ(small.height, 13);
    EXPECT_EQ(synth::parse_resolution("1x1").width, 1);
    EXPECT_EQ(synth::parse_resolution("65536x2").width, 65536);
    EXPECT_EQ(synth::parse_resolution("640X480").height, 480);
}

TEST(SynthParse, ResolutionRejectsMalformedText) {
    for (const char* bad : {"0x5", "abc", "12x", "70000x10", "", "x5", "5x5x5", "-5x5", " 5x5", "5x0", "HD2"}) {
        test::expect_error([bad] { synth::parse_resolution(bad); },
                           std::string("unknown resolution '") + bad + "'; allowed: 480p (640x480)");
        test::expect_error([bad] { synth::parse_resolution(bad); }, "or WxH with W and H from 1 to 65536");
    }
    // Both sides allowed, the product not: the one message says both limits.
    EXPECT_EQ(synth::parse_resolution("65536x16384").height, 16384);  // 2^30 pixels
    test::expect_error([] { synth::parse_resolution("65536x16385"); },
                       "resolution '65536x16385' has more pixels than an image klab makes; allowed: 480p (640x480)");
    test::expect_error([] { synth::parse_resolution("65536x16385"); },
                       "or WxH with W and H from 1 to 65536 and at most 1073741824 pixels in all");
}

// A change detector, not a correctness test: it pins the exact bytes of small generated images
// so that an accidental change of the generator (which would silently change every benchmark
// input) is noticed. If the generator is changed on purpose, recompute and update the values.
TEST(SynthFingerprint, GeneratorOutputIsPinned) {
    EXPECT_EQ(fnv1a(synth::generate(Pattern::natural, 96, 64, 3, 7)), 0xD910327EE3E93B18ULL);
    EXPECT_EQ(fnv1a(synth::generate(Pattern::noise, 16, 16, 3, 7)), 0x8A16F1449D64B34BULL);
    EXPECT_EQ(fnv1a(synth::generate(Pattern::gradient, 16, 16, 3)), 0xD011DA182A29AAA5ULL);
    EXPECT_EQ(fnv1a(synth::generate(Pattern::natural, 40, 30, 1, 1)), 0xF53BC51A1F8958FEULL);
}

}  // namespace
}  // namespace klab
