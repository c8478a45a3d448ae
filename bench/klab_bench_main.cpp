// klab-bench: placeholder while it is being written.
#include <benchmark/benchmark.h>
int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
