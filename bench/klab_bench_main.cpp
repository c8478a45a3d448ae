// klab-bench: the seeds' performance study as a Google Benchmark executable (bench/README.md).
#include "bench/benchmarks.hpp"

int main(int argc, char** argv) { return klab::bench::bench_main(argc, argv); }
