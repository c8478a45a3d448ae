// The libFuzzer entry point of one fuzz target: fuzz/CMakeLists.txt compiles this file once per
// target function, naming it in KLAB_FUZZ_FUNCTION (e.g. klab::fuzz::image).
#include <cstdio>
#include <cstdlib>

#include "fuzz/targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        KLAB_FUZZ_FUNCTION(data, size);
    } catch (const klab::fuzz::Violation& broken) {
        std::fprintf(stderr, "klab fuzz: a broken promise: %s\n", broken.what());
        std::abort();  // libFuzzer saves the input as a crash
    }
    return 0;
}
