#!/usr/bin/env bash
# A/B test of changes to one variant, in one call on a GPU machine: each experiment is a copy of the
# variant's .cu file with one sed edit (or another file in its place), registered beside the
# original under the name <variant>_<suffix>. The script builds klab, runs the copies' conformance
# cases, tunes the copies (and the original where it has no record) on the classes given, benchmarks
# them all on the study's rows of the variant and prints each row's medians with the ratio to the
# original's last. The copies are removed when it ends; nothing else in the tree is written but
# build/release (whose programs hold the copies until the next build) and
# results/<gpu-slug>/autotune.json (their records), so run it on a copy of the tree, as a device
# tool's call is. The "tried and dropped" figures in kernels/notes/ come from such runs.
# Every copy must stay correct: klab tune and klab-bench verify each output against the CPU
# reference and refuse a copy that differs, so a "what if this part cost nothing" copy (a step
# removed, wrong pixels) measures nothing here; time such a question with a probe (probes/).
# The copies share klab tune's process and klab-bench's: a copy that changes the device's state (a
# limit such as cudaLimitPersistingL2CacheSize) changes it for every copy measured after it there;
# only the profiles (PROFILE) run each variant in a process of its own.
#
# Usage: EXPERIMENTS='SUFFIX|SED-EXPRESSION
#                     SUFFIX|@FILE
#                     ...' bash scripts/gpu-experiment.sh kernels/VARIANT.cu [TUNE CLASS...]
#   SUFFIX        lower-case letters, digits and '_' (the copy is <variant>_SUFFIX)
#   SED-EXPRESSION  applied to the copy (sed -e); FILE: a whole .cu file used as the copy instead
#   TUNE CLASS    klab tune --class values (e.g. sobel/8K/c1/aos); none: the copies run their
#                 default block
# Environment: BENCH (a regex the benchmark names must also match, e.g. '/8K/'), REPETITIONS (5),
#              SKIP_TESTS=1 (no conformance cases), OUT (logs; default build/gpu-experiment),
#              PROFILE (a regex of kernel names, e.g. conv_box_warp_ring: Nsight Compute, --set full
#              with source counters, on one launch of each variant's first benchmarked row, or its
#              first that matches the regex PROFILE_ROW, e.g. box9; its figures and its hottest
#              code's opcodes printed last (scripts/ncu_summary.py), the details and SASS pages as
#              CSV in $OUT/prof/), PROFILE_LAUNCHES (1 to 16, default 1: how many launches
#              PROFILE's regex matches in one run of the variant, e.g. 2 with PROFILE=integral_tile,
#              both kernels of integral.tile_gather, 1 with PROFILE=integral_tile_gather_kernel; the
#              profile skips three runs' worth of them and takes one run's, each launch's figures),
#              PROFILE_CLOCKS (base, the default: Nsight Compute locks the SM clock at its base, so
#              that runs compare; unlocked: the clocks left as klab-bench runs them, boost included
#              (--clock-control none), where a kernel's memory latency costs more cycles and its
#              bound may lie elsewhere).
#              TIMELINE (arguments for scripts/timeline.py, e.g. '--names a,b,c --active b c'): the
#              summary of the blocks' timestamps that a copy marked with probes/block_timeline.hpp
#              prints, from the tuner's and the benchmark's logs (printed whenever a copy prints them)
#              A copy counted with probes/sm_clock.hpp: the SM clock its blocks kept in the tuner's
#              and the benchmark's runs (scripts/sm_clock.py), printed whenever a copy prints CLK lines
# Example: EXPERIMENTS='prefetch8|s/kPrefetch = Channels == 1 ? 0 : 4;/kPrefetch = Channels == 1 ? 0 : 8;/' \
#            BENCH=/8K/ bash scripts/gpu-experiment.sh kernels/sobel_register_window.cu sobel/8K/c3/aos
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-build/gpu-experiment}
mkdir -p "$OUT"
rm -f "$OUT/tune.log" "$OUT/bench.log"  # a step that does not run leaves no earlier run's log to read
export PATH="/usr/local/cuda/bin:$PATH"

fail() {
  echo "gpu-experiment: $*" >&2
  exit 2
}
[[ $# -ge 1 ]] || fail "usage: EXPERIMENTS='SUFFIX|SED-EXPRESSION ...' bash scripts/gpu-experiment.sh kernels/VARIANT.cu [TUNE CLASS...]"
source_file=$1
shift
[[ -f $source_file && $source_file == kernels/*.cu ]] || fail "$source_file: not a variant file (kernels/NAME.cu)"
launches=${PROFILE_LAUNCHES:-1}
[[ $launches =~ ^([1-9]|1[0-6])$ ]] ||
  fail "PROFILE_LAUNCHES=$launches: give how many launches PROFILE's regex matches in one run of the variant, 1 to 16"
[[ -z ${PROFILE_LAUNCHES:-} || -n ${PROFILE:-} ]] || fail "PROFILE_LAUNCHES without PROFILE: give PROFILE (a regex of kernel names) too"
case ${PROFILE_CLOCKS:-base} in
  base) clock_control=base ;;
  unlocked) clock_control=none ;;
  *) fail "PROFILE_CLOCKS=$PROFILE_CLOCKS: give base (Nsight Compute's default: the SM clock locked at its base) or unlocked (the clocks left as klab-bench runs them, boost included)" ;;
esac
[[ -z ${PROFILE_CLOCKS:-} || -n ${PROFILE:-} ]] || fail "PROFILE_CLOCKS without PROFILE: give PROFILE (a regex of kernel names) too"
[[ -n ${EXPERIMENTS:-} ]] || fail "EXPERIMENTS is empty: give one 'SUFFIX|SED-EXPRESSION' or 'SUFFIX|@FILE' per line"
variant=$(sed -n 's/.*std::string name() const override { return "\([a-z0-9_.]*\)"; }.*/\1/p' "$source_file" | head -n 1)
[[ -n $variant ]] || fail "$source_file: no name() returning a string literal found"
stem=$(basename "$source_file" .cu)

copies=()
remove_copies() { [[ ${#copies[@]} -eq 0 ]] || rm -f "${copies[@]}"; }
trap remove_copies EXIT
trap 'exit 130' INT TERM

names=("$variant")
while IFS= read -r line; do
  [[ -z ${line//[[:space:]]/} ]] && continue
  suffix=${line%%|*}
  edit=${line#*|}
  [[ $suffix =~ ^[a-z0-9_]+$ && $line == *"|"* ]] || fail "experiment '$line': expected SUFFIX|SED-EXPRESSION or SUFFIX|@FILE, SUFFIX of [a-z0-9_]"
  copy="kernels/${stem}_x_${suffix}.cu"
  [[ -e $copy ]] && fail "$copy exists already (a suffix given twice, or left by a killed run: remove it)"
  copies+=("$copy")
  if [[ $edit == @* ]]; then
    [[ -f ${edit#@} ]] || fail "experiment $suffix: ${edit#@} is no file"
    cp "${edit#@}" "$copy"
  else
    cp "$source_file" "$copy"
    sed -i -e "$edit" "$copy" || fail "experiment $suffix: sed -e '$edit' failed"
    cmp -s "$source_file" "$copy" && fail "experiment $suffix: the edit '$edit' changes nothing"
  fi
  sed -i -e "s/return \"${variant//./\\.}\";/return \"${variant}_$suffix\";/" "$copy"
  grep -q "return \"${variant}_$suffix\";" "$copy" || fail "experiment $suffix: the copy does not return the name $variant from name()"
  names+=("${variant}_$suffix")
done <<<"$EXPERIMENTS"
echo "gpu-experiment: ${names[*]}"

start=$(date +%s)
if ! { cmake --preset release >"$OUT/build.log" 2>&1 && cmake --build --preset release --target klab klab-bench klab-tests-gpu >>"$OUT/build.log" 2>&1; }; then
  grep -E -A 6 "error" "$OUT/build.log" | head -n 40
  fail "the build failed (log: $OUT/build.log)"
fi
echo "gpu-experiment: built in $(($(date +%s) - start)) s"

if [[ ${SKIP_TESTS:-0} != 1 ]]; then
  # Conformance case names start with the variant's name, '.' as '_', then "__".
  filter=""
  for name in "${names[@]:1}"; do filter+="${filter:+:}*/${name//./_}__*"; done
  ./build/release/tests/klab-tests-gpu --gtest_filter="$filter" >"$OUT/tests.log" 2>&1
  status=$?
  grep -E '^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]' "$OUT/tests.log" | sed 's/^/gpu-experiment: tests: /'
  if [[ $status -ne 0 ]]; then
    grep -E '^\[  FAILED  \]' "$OUT/tests.log" | head -n 20
    fail "conformance cases failed (log: $OUT/tests.log): nothing is timed"
  fi
  grep -q -E '^\[  PASSED  \] [1-9]' "$OUT/tests.log" ||
    fail "no conformance case ran (no GPU here, or no case is named like $filter; log: $OUT/tests.log)"
fi

if [[ $# -gt 0 ]]; then
  classes=()
  for class in "$@"; do classes+=(--class "$class"); done
  ./build/release/klab tune --results results --missing-only --variant "${names[@]}" "${classes[@]}" >"$OUT/tune.log" 2>&1 ||
    fail "klab tune failed (log: $OUT/tune.log)"
  grep -E '^\[[0-9]+/[0-9]+\]' "$OUT/tune.log" | sed 's/^/gpu-experiment: /'
fi

# The study's rows of the variants: names "<variant>/<size>/<format>/...".
regex="^($(printf '%s|' "${names[@]}" | sed 's/|$//; s/\./\\./g'))/"
# The regex already ends in the "/" after the variant: a BENCH that starts with "/" (e.g. /8K/) would
# need a second one there.
[[ -n ${BENCH:-} ]] && regex="$regex.*${BENCH#/}"
./build/release/klab-bench --klab_results results --benchmark_filter="$regex" --benchmark_repetitions="${REPETITIONS:-5}" \
  --benchmark_report_aggregates_only=true --benchmark_out="$OUT/bench.json" --benchmark_out_format=json >"$OUT/bench.log" 2>&1 ||
  fail "klab-bench failed (log: $OUT/bench.log)"

python3 - "$OUT/bench.json" "$variant" <<'PY'
import json
import sys

bench, original = json.load(open(sys.argv[1])), sys.argv[2]
rows = {}  # problem -> {variant: (median us, label)}
for b in bench["benchmarks"]:
    name = b["name"]
    if not name.endswith("_median"):
        continue
    variant, _, problem = name.removesuffix("/manual_time_median").partition("/")
    rows.setdefault(problem, {})[variant] = (b["real_time"], b.get("label", "").split(" (")[0])
if not rows:
    sys.exit("gpu-experiment: no benchmark row matched (BENCH too narrow?)")
print(f"{'problem':40s} {'variant':45s} {'median us':>10s} {'x original':>10s}  block")
for problem in sorted(rows):
    base = rows[problem].get(original, (None, ""))[0]
    for variant, (us, label) in sorted(rows[problem].items(), key=lambda item: item[0] != original):
        ratio = f"{us / base:.3f}" if base else "-"
        print(f"{problem:40s} {variant:45s} {us:10.1f} {ratio:>10s}  {label}")
PY

# What the copies printed into the tuner's and the benchmark's logs, one process each: copies marked
# with probes/block_timeline.hpp one launch's blocks (summarised by scripts/timeline.py, with
# TIMELINE's arguments, split at blanks: no quoting inside it), copies counted with
# probes/sm_clock.hpp their blocks' cycles and nanoseconds every 100th counted launch (the SM clock
# they kept, by scripts/sm_clock.py).
read -r -a timeline_args <<<"${TIMELINE:-}"
timelines=0
for log in "$OUT/tune.log" "$OUT/bench.log"; do
  [[ -f $log ]] || continue
  if grep -q '^TL ' "$log"; then
    timelines=$((timelines + 1))
    echo "gpu-experiment: block timeline of $(basename "$log" .log)'s marked launch:"
    python3 scripts/timeline.py "$log" ${timeline_args[@]+"${timeline_args[@]}"} 2>&1 | sed 's/^/  /'
  fi
  if grep -q '^CLK ' "$log"; then
    echo "gpu-experiment: SM clock of the counted launches in $(basename "$log" .log):"
    python3 scripts/sm_clock.py "$log" 2>&1 | sed 's/^/  /'
  fi
done
if [[ -n ${TIMELINE:-} && $timelines -eq 0 ]]; then
  echo "gpu-experiment: TIMELINE given, but no copy printed a TL line (no marks, 'on' never true, or fewer than 3 marked launches in a process)"
fi

# Nsight Compute on one launch of each variant (the original and the copies), on its first row.
if [[ -n ${PROFILE:-} ]]; then
  mkdir -p "$OUT/prof"
  for name in "${names[@]}"; do
    row=$(python3 - "$OUT/bench.json" "$name" "${PROFILE_ROW:-}" <<'PY'
import json
import re
import sys

for b in json.load(open(sys.argv[1]))["benchmarks"]:
    variant, _, rest = b["name"].partition("/")
    problem = rest.split("/manual_time")[0]
    if variant == sys.argv[2] and re.search(sys.argv[3], problem):
        print("^" + re.escape(variant + "/" + problem) + "/")
        break
PY
    )
    [[ -n $row ]] || { echo "gpu-experiment: $name: no benchmarked row to profile"; continue; }
    report="$OUT/prof/$name"
    # The fourth run's launches of the kernels: past klab-bench's verification and warm-up runs
    # (PROFILE_LAUNCHES matching launches per run).
    if ! ncu --set full --import-source yes --clock-control "$clock_control" --launch-skip $((3 * launches)) --launch-count "$launches" -k "regex:$PROFILE" -f -o "$report" \
      ./build/release/klab-bench --klab_results results --benchmark_filter="$row" --benchmark_min_time=0.01s >"$report.log" 2>&1; then
      echo "gpu-experiment: $name: Nsight Compute failed (log: $report.log)"
      continue
    fi
    if [[ ! -f $report.ncu-rep ]]; then
      echo "gpu-experiment: $name: no launch of a kernel matching '$PROFILE' past the first $((3 * launches)) on $row (log: $report.log)"
      continue
    fi
    echo "gpu-experiment: Nsight Compute, $name (${row}):"
    python3 scripts/ncu_summary.py --report "$report.ncu-rep" 2>&1 | sed 's/^/  /'
    rm -f "$report.ncu-rep"
  done
fi
