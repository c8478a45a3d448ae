#!/usr/bin/env bash
# Builds one probe (probes/NAME.cu: a standalone measurement behind a design decision, see
# probes/README.md) and runs it on this machine's GPU; its output goes to $OUT/probe.log.
# Usage: bash scripts/gpu-probe.sh NAME [ARG...]   (e.g. box_warp_prefix; ARGs go to the probe, e.g. profile)
# Environment: OUT (logs; default build/gpu-probe), PROFILE (a regex of kernel names: run the probe
#              under Nsight Compute instead, --set full with source counters, on the launch of a
#              matching kernel after the first PROFILE_SKIP (default 0) such launches, or on
#              PROFILE_LAUNCHES (default 1) consecutive ones; the figures and the hottest code's
#              opcodes printed by scripts/ncu_summary.py, the pages as CSV in $OUT/prof.*.csv),
#              PROFILE_CLOCKS (base, the default: the SM clock locked at its base; unlocked: the
#              clocks left as the probe's own timings run them, boost included).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
probes=$(cd probes && ls -- *.cu | sed 's/\.cu$//' | tr '\n' ' ')
name=${1:-}
if [[ -z $name || ! -f probes/$name.cu ]]; then
  echo "gpu-probe: usage: bash scripts/gpu-probe.sh NAME [ARG...], NAME one of: $probes" >&2
  exit 2
fi
shift
skip=${PROFILE_SKIP:-0}
launches=${PROFILE_LAUNCHES:-1}
if [[ ! $skip =~ ^[0-9]{1,6}$ || ! $launches =~ ^([1-9]|1[0-6])$ ]]; then
  echo "gpu-probe: PROFILE_SKIP=$skip, PROFILE_LAUNCHES=$launches: give a count of launches to skip (0 or more) and 1 to 16 to profile" >&2
  exit 2
fi
case ${PROFILE_CLOCKS:-base} in
  base) clock_control=base ;;
  unlocked) clock_control=none ;;
  *)
    echo "gpu-probe: PROFILE_CLOCKS=$PROFILE_CLOCKS: give base (Nsight Compute's default: the SM clock locked at its base) or unlocked (the clocks left as the probe's timings run them, boost included)" >&2
    exit 2
    ;;
esac
if [[ -z ${PROFILE:-} && -n ${PROFILE_SKIP:-}${PROFILE_LAUNCHES:-}${PROFILE_CLOCKS:-} ]]; then
  echo "gpu-probe: PROFILE_SKIP, PROFILE_LAUNCHES or PROFILE_CLOCKS without PROFILE: give PROFILE (a regex of kernel names) too" >&2
  exit 2
fi
OUT=${OUT:-build/gpu-probe}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
target=klab-probe-${name//_/-}
if ! { cmake --preset release && cmake --build --preset release --target "$target"; } >"$OUT/build.log" 2>&1; then
  tail -n 30 "$OUT/build.log"
  echo "gpu-probe: the build failed (log: $OUT/build.log)"
  exit 1
fi
if [[ -z ${PROFILE:-} ]]; then
  "./build/release/probes/$target" "$@" | tee "$OUT/probe.log"
  exit "${PIPESTATUS[0]}"
fi

report="$OUT/prof"
rm -f "$report.ncu-rep"
if ! ncu --set full --import-source yes --clock-control "$clock_control" --launch-skip "$skip" --launch-count "$launches" -k "regex:$PROFILE" -f -o "$report" \
  "./build/release/probes/$target" "$@" >"$OUT/probe.log" 2>&1; then
  tail -n 20 "$OUT/probe.log"
  echo "gpu-probe: the probe failed under Nsight Compute (log: $OUT/probe.log)"
  exit 1
fi
if [[ ! -f $report.ncu-rep ]]; then
  echo "gpu-probe: no launch of a kernel matching '$PROFILE' past the first $skip (log: $OUT/probe.log)"
  exit 1
fi
python3 scripts/ncu_summary.py --report "$report.ncu-rep"
status=$?
rm -f "$report.ncu-rep"
exit "$status"
