// klab-bench: the seeds' performance study as a Google Benchmark executable (bench/README.md).
#include "bench/benchmarks.hpp"
#include "harness/interrupt.hpp"

int main(int argc, char** argv) {
    // Ctrl-C or kill removes the output file being written (--benchmark_out's PATH.partial-PID), as
    // in klab, which runs the same bench_main in its own process.
    klab::install_interrupt_handlers();
    return klab::bench::bench_main(argc, argv);
}
