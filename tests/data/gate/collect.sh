#!/usr/bin/env bash
# Evidence for the regression gate (issue 15), on the GPU machine: two full studies of the same
# build in two processes (A, B), then a throwaway build whose conv.separable_fused and sobel.fused
# launch ~10% more blocks (apply-slowdown.py) and a third full study (SLOW). Packs the three
# bench.json files and the logs into $OUT/gate-data.tar.gz.
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
export KLAB_GIT_COMMIT=062e9f0f92f6a73cf73b8634e5536015d0ac561c KLAB_GIT_DIRTY=0
d=$OUT/gate; mkdir -p "$d"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$d/device.txt" 2>&1
t0=$(date +%s)
{ cmake --preset release && cmake --build --preset release; } > "$d/build.log" 2>&1 || { tail -n 30 "$d/build.log"; exit 1; }
echo "built in $(($(date +%s) - t0)) s"
for r in A B; do
  ./build/release/klab run --results results --out "$d/run$r" --no-tune --no-report > "$d/run$r.log" 2>&1
  echo "run $r exit $? at $(($(date +%s) - t0)) s"
done
python3 .gate/apply-slowdown.py . && cmake --build --preset release >> "$d/build.log" 2>&1 || { tail -n 30 "$d/build.log"; exit 1; }
KLAB_GIT_DIRTY=1 ./build/release/klab run --results results --out "$d/runSLOW" --no-tune --no-report > "$d/runSLOW.log" 2>&1
echo "run SLOW exit $? at $(($(date +%s) - t0)) s (note: the build's commit id was baked at configure time)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$d/device.txt" 2>&1
tar czf "$OUT/gate-data.tar.gz" -C "$OUT" gate
ls -la "$d" "$d"/run*/ | head -30
