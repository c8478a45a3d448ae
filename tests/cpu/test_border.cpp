// Border modes: the index mapping, the spec parser, and seed 000's padding example (the golden
// test of docs/numeric-contract.md), padded by one pixel with every mode.
#include <gtest/gtest.h>

#include <vector>

#include "harness/border.hpp"
#include "harness/error.hpp"
#include "harness/reference/reference.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

std::vector<int> mapped(int from, int to, int n, BorderMode mode) {
    std::vector<int> out;
    for (int i = from; i <= to; ++i) out.push_back(border_index(i, n, mode));
    return out;
}

TEST(BorderIndex, InsideIsIdentityForEveryMode) {
    for (BorderMode mode : {BorderMode::constant, BorderMode::replicate, BorderMode::mirror, BorderMode::reflect,
                            BorderMode::wrap}) {
        for (int i = 0; i < 5; ++i) EXPECT_EQ(border_index(i, 5, mode), i) << to_string(mode);
    }
}

// Row "abcd" (indices 0..3) read from -5 to 8.
TEST(BorderIndex, ConstantMarksOutsideWithMinusOne) {
    EXPECT_EQ(mapped(-2, 5, 4, BorderMode::constant), (std::vector<int>{-1, -1, 0, 1, 2, 3, -1, -1}));
}
TEST(BorderIndex, ReplicateRepeatsTheEdge) {
    EXPECT_EQ(mapped(-3, 6, 4, BorderMode::replicate), (std::vector<int>{0, 0, 0, 0, 1, 2, 3, 3, 3, 3}));
}
TEST(BorderIndex, MirrorIsReflect101) {  // ...cb|abcd|cba...: the edge pixel is not repeated
    EXPECT_EQ(mapped(-5, 8, 4, BorderMode::mirror),
              (std::vector<int>{1, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1, 2}));
}
TEST(BorderIndex, ReflectRepeatsTheEdge) {  // ...dcba|abcd|dcba...
    EXPECT_EQ(mapped(-5, 8, 4, BorderMode::reflect),
              (std::vector<int>{3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0, 0}));
}
TEST(BorderIndex, WrapIsPeriodic) {
    EXPECT_EQ(mapped(-5, 8, 4, BorderMode::wrap), (std::vector<int>{3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0}));
}
TEST(BorderIndex, SinglePixelAxisMapsEverythingOntoIt) {
    for (BorderMode mode : {BorderMode::replicate, BorderMode::mirror, BorderMode::reflect, BorderMode::wrap}) {
        for (int i = -40; i <= 40; ++i) EXPECT_EQ(border_index(i, 1, mode), 0) << to_string(mode) << " i=" << i;
    }
}
TEST(BorderIndex, FarOutsideStaysInRange) {  // a 31-wide mask over a 2-pixel image reads 15 pixels out
    for (BorderMode mode : {BorderMode::replicate, BorderMode::mirror, BorderMode::reflect, BorderMode::wrap}) {
        for (int n = 1; n <= 4; ++n) {
            for (int i = -100; i <= 100; ++i) {
                const int m = border_index(i, n, mode);
                EXPECT_GE(m, 0);
                EXPECT_LT(m, n);
            }
        }
    }
    EXPECT_EQ(mapped(-4, 5, 2, BorderMode::mirror), (std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
    EXPECT_EQ(mapped(-4, 5, 2, BorderMode::reflect), (std::vector<int>{0, 1, 1, 0, 0, 1, 1, 0, 0, 1}));  // ab|ba|ab|ba
}

TEST(BorderParse, AcceptsEveryModeAndConstantValues) {
    EXPECT_EQ(parse_border("replicate").mode, BorderMode::replicate);
    EXPECT_EQ(parse_border("mirror").mode, BorderMode::mirror);
    EXPECT_EQ(parse_border("reflect").mode, BorderMode::reflect);
    EXPECT_EQ(parse_border("wrap").mode, BorderMode::wrap);
    EXPECT_EQ(parse_border("constant").value, 0);
    const Border b = parse_border("constant:200");
    EXPECT_EQ(b.mode, BorderMode::constant);
    EXPECT_EQ(b.value, 200);
    EXPECT_EQ(to_string(b), "constant:200");
}
TEST(BorderParse, RejectsBadInputWithItsOwnMessage) {
    test::expect_error([] { parse_border("clamp"); }, "unknown border mode 'clamp'");
    test::expect_error([] { parse_border("constant:256"); }, "bad constant value '256'");
    test::expect_error([] { parse_border("constant:-1"); }, "bad constant value");
    test::expect_error([] { parse_border("constant:"); }, "bad constant value");
    test::expect_error([] { parse_border("wrap:3"); }, "takes no value");
}

// Seed 000's example: the 3x3 image padded by one pixel. The seed prints the top-left 4x4 of the
// padded 5x5 for constant 0, replicate and mirror; we check the full 5x5.
class SeedPadding : public ::testing::Test {
protected:
    ImageU8 image = test::gray_image(3, 3, {165, 95, 215, 222, 144, 199, 255, 172, 83});
    void expect_padded(Border border, const std::vector<int>& expected) {
        const ImageU8 padded = reference::pad(image, 1, 1, border);
        EXPECT_EQ(test::values(padded), expected) << to_string(border);
    }
};

TEST_F(SeedPadding, ConstantZero) {
    expect_padded({BorderMode::constant, 0}, {0, 0,   0,   0,   0,    //
                                              0, 165, 95,  215, 0,    //
                                              0, 222, 144, 199, 0,    //
                                              0, 255, 172, 83,  0,    //
                                              0, 0,   0,   0,   0});
}
TEST_F(SeedPadding, Replicate) {
    expect_padded({BorderMode::replicate, 0}, {165, 165, 95,  215, 215,  //
                                               165, 165, 95,  215, 215,  //
                                               222, 222, 144, 199, 199,  //
                                               255, 255, 172, 83,  83,   //
                                               255, 255, 172, 83,  83});
}
TEST_F(SeedPadding, Mirror) {
    expect_padded({BorderMode::mirror, 0}, {144, 222, 144, 199, 144,  //
                                            95,  165, 95,  215, 95,   //
                                            144, 222, 144, 199, 144,  //
                                            172, 255, 172, 83,  172,  //
                                            144, 222, 144, 199, 144});
}
TEST_F(SeedPadding, Reflect) {
    expect_padded({BorderMode::reflect, 0}, {165, 165, 95,  215, 215,  //
                                             165, 165, 95,  215, 215,  //
                                             222, 222, 144, 199, 199,  //
                                             255, 255, 172, 83,  83,   //
                                             255, 255, 172, 83,  83});
}
TEST_F(SeedPadding, Wrap) {
    expect_padded({BorderMode::wrap, 0}, {83,  255, 172, 83,  255,  //
                                          215, 165, 95,  215, 165,  //
                                          199, 222, 144, 199, 222,  //
                                          83,  255, 172, 83,  255,  //
                                          215, 165, 95,  215, 165});
}
TEST_F(SeedPadding, ConstantNonZero) {
    const ImageU8 padded = reference::pad(image, 1, 1, {BorderMode::constant, 7});
    EXPECT_EQ(padded.at(0, 0, 0), 7);
    EXPECT_EQ(padded.at(4, 2, 0), 7);
    EXPECT_EQ(padded.at(1, 1, 0), 165);
}
// Two pixels of padding tell reflect (edge repeated) from replicate and mirror: a row "a b c"
// becomes "b a | a b c | c b" under reflect and "c b | a b c | b a" under mirror.
TEST_F(SeedPadding, ReflectByTwo) {
    EXPECT_EQ(test::values(reference::pad(image, 2, 2, {BorderMode::reflect, 0})),
              (std::vector<int>{144, 222, 222, 144, 199, 199, 144,  //
                                95,  165, 165, 95,  215, 215, 95,   //
                                95,  165, 165, 95,  215, 215, 95,   //
                                144, 222, 222, 144, 199, 199, 144,  //
                                172, 255, 255, 172, 83,  83,  172,  //
                                172, 255, 255, 172, 83,  83,  172,  //
                                144, 222, 222, 144, 199, 199, 144}));
}
TEST_F(SeedPadding, MirrorByTwo) {
    EXPECT_EQ(test::values(reference::pad(image, 2, 2, {BorderMode::mirror, 0})),
              (std::vector<int>{83,  172, 255, 172, 83,  172, 255,  //
                                199, 144, 222, 144, 199, 144, 222,  //
                                215, 95,  165, 95,  215, 95,  165,  //
                                199, 144, 222, 144, 199, 144, 222,  //
                                83,  172, 255, 172, 83,  172, 255,  //
                                199, 144, 222, 144, 199, 144, 222,  //
                                215, 95,  165, 95,  215, 95,  165}));
}
TEST_F(SeedPadding, WrapByTwo) {
    EXPECT_EQ(test::values(reference::pad(image, 2, 2, {BorderMode::wrap, 0})),
              (std::vector<int>{144, 199, 222, 144, 199, 222, 144,  //
                                172, 83,  255, 172, 83,  255, 172,  //
                                95,  215, 165, 95,  215, 165, 95,   //
                                144, 199, 222, 144, 199, 222, 144,  //
                                172, 83,  255, 172, 83,  255, 172,  //
                                95,  215, 165, 95,  215, 165, 95,   //
                                144, 199, 222, 144, 199, 222, 144}));
}

// The seed's three printed tables are the top-left 4x4 corners; check them as printed.
TEST_F(SeedPadding, SeedTablesAsPrinted) {
    const auto corner = [&](Border border) {
        const ImageU8 padded = reference::pad(image, 1, 1, border);
        std::vector<int> out;
        for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 4; ++x) out.push_back(padded.at(x, y, 0));
        return out;
    };
    EXPECT_EQ(corner({BorderMode::constant, 0}),
              (std::vector<int>{0, 0, 0, 0, 0, 165, 95, 215, 0, 222, 144, 199, 0, 255, 172, 83}));
    EXPECT_EQ(corner({BorderMode::replicate, 0}),
              (std::vector<int>{165, 165, 95, 215, 165, 165, 95, 215, 222, 222, 144, 199, 255, 255, 172, 83}));
    EXPECT_EQ(corner({BorderMode::mirror, 0}),
              (std::vector<int>{144, 222, 144, 199, 95, 165, 95, 215, 144, 222, 144, 199, 172, 255, 172, 83}));
}

}  // namespace
}  // namespace klab
