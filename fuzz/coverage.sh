#!/usr/bin/env bash
# Line coverage of the parsers by the fuzz corpora (fuzz/README.md): builds the fuzz targets with
# clang's source-based coverage into build/fuzz-coverage, runs each target once over its seeds and
# what the last `ctest --preset fuzz` found (build/fuzz/fuzz-work/<target>/corpus), and prints, per
# target, the lines and branches of its parser's functions that ran. Needs llvm-profdata and
# llvm-cov (Debian: llvm).
set -euo pipefail
cd "$(dirname "$0")/.."
tool() { command -v "$1" || command -v "$1-14" || { echo "coverage.sh: $1 not found (Debian: apt-get install llvm)" >&2; exit 1; }; }
profdata=$(tool llvm-profdata)
cov=$(tool llvm-cov)

cmake --preset fuzz -B build/fuzz-coverage -DKLAB_FUZZ_COVERAGE=ON >/dev/null
cmake --build build/fuzz-coverage --target klab-fuzz >/dev/null
out=build/fuzz-coverage/profiles
rm -rf "$out" && mkdir -p "$out"

# target:function:its parser's sources:its parser's functions (a regular expression over the
# demangled names: the files also hold encoders, writers and lookups that no target calls)
targets=(
  "png:image:harness/io/png_codec.cpp harness/io/image_io.cpp:decode_png|colour_space_chunks|minimum_idat_bytes|png_message|sniff_format|decode_image"
  "jpeg:image:harness/io/jpeg_codec.cpp:decode_jpeg|read_jpeg_header|read_jpeg_pixels|jump_on_|stop_after_many_scans|install_error_manager|Decompressor"
  "pnm:image:harness/io/pnm_codec.cpp:decode_pnm|PnmParser|describe_byte|is_pnm_space|is_digit"
  "mask:mask:harness/mask.cpp:parse_mask|Mask::Mask|separate|separable"
  "spec:spec:harness/filter_spec.cpp harness/border.cpp harness/variant.cpp autotune/problem_class.cpp:parse_filter_spec|split|parse_number|parse_border|parse_block_shape|parse_problem_class|bucket_named"
  "bench_json:bench_json:bench/bench_json.cpp:parse_bench_json|parse_document|BenchName|microseconds_per_unit|as_text|without_manual_time|split"
  "tuning_cache:tuning_cache:autotune/tuning_cache.cpp autotune/tuning_record_json.cpp autotune/tuning_lookup.cpp:TuningCache::parse|record_from|candidate_from|shape_from|kernels_from|gpu_from|integer|parse_digits|TuningCache::merge|same_key|lookup"
  "apply_list:apply_list:cli/apply_plan.cpp:parse_input_list"
)
for entry in "${targets[@]}"; do
  IFS=: read -r target function sources functions <<<"$entry"
  binary=build/fuzz-coverage/klab-fuzz-$function
  corpora=("data/fuzz/$target")
  if [[ -d build/fuzz/fuzz-work/$target/corpus ]]; then corpora+=("build/fuzz/fuzz-work/$target/corpus"); fi
  LLVM_PROFILE_FILE="$out/$target.profraw" "$binary" -runs=0 "${corpora[@]}" >/dev/null 2>&1
  "$profdata" merge -sparse "$out/$target.profraw" -o "$out/$target.profdata"
  # shellcheck disable=SC2086  # the list of sources
  "$cov" report -show-functions -Xdemangler=c++filt "$binary" -instr-profile="$out/$target.profdata" $sources |
    grep -E "$functions" |
    awk -v target="$target" -v inputs="$(find "${corpora[@]}" -type f | wc -l)" '
      # the last nine columns: regions, missed, cover, lines, missed, cover, branches, missed, cover
      { lines += $(NF-5); missed += $(NF-4); branches += $(NF-2); bmissed += $(NF-1); n++ }
      END { printf "%-13s %5d inputs  %3d functions  lines %4d/%4d (%5.1f%%)  branches %4d/%4d (%5.1f%%)\n",
                   target, inputs, n, lines - missed, lines, 100 * (lines - missed) / lines,
                   branches - bmissed, branches, branches ? 100 * (branches - bmissed) / branches : 100 }'
done
