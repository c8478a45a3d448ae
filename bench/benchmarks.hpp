#pragma once
// klab-bench: the study (study.hpp) registered with Google Benchmark and run. Each GPU row runs
// on device-resident data: it is verified once against the CPU reference on its own problem
// (a wrong result is an error row, never a time), then every iteration flushes the L2 cache and
// times one launch with CUDA events (manual time). bench/README.md describes names, counters and
// context; `klab run` calls bench_main() with its own arguments.
namespace klab::bench {

// Google Benchmark's flags plus klab's (--klab_study, --klab_results; `--help` lists them).
// Returns the process exit code: 0, 1 when a row failed (listed on stderr), 2 for bad flags.
int bench_main(int argc, char** argv);

}  // namespace klab::bench
