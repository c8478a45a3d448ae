// blur IN OUT: a 5x5 Gaussian blur on the GPU (the fastest verified variant klab knows for this
// GPU), or with the CPU reference on a machine without one.
#include <cstdio>

#include <klab/klab.hpp>

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: blur IN OUT (PNG, JPEG, PGM/PPM)\n");
        return 2;
    }
    try {
        const klab::ImageU8 image = klab::io::read_image(argv[1]);
        klab::ImageU8 blurred;
        if (klab::gpu_available()) {
            const klab::FilterReport report = klab::filter(image, blurred, "gaussian:5");
            std::printf("gpu: %s, block %s\n", report.variant.c_str(), report.shape.c_str());
        } else {
            blurred = klab::filter_on_cpu(image, "gaussian:5");
            std::printf("cpu: the reference (no CUDA device)\n");
        }
        klab::io::write_image(argv[2], blurred);
    } catch (const klab::Error& e) {
        std::fprintf(stderr, "blur: %s\n", e.what());
        return 1;
    }
    return 0;
}
