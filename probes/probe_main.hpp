// What every probe's main() does: runs the probe and reports an error (no GPU, a CUDA error) on
// stderr with exit status 1 instead of terminating.
#pragma once

#include <cstdio>
#include <exception>

namespace klab::probes {

inline int run_probe(int (*probe)()) {
    try {
        return probe();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}

}  // namespace klab::probes
