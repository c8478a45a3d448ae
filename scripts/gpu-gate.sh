#!/usr/bin/env bash
# The GPU job's regression gate (.github/workflows/gpu-bench.yml): the bench.json this job's
# `klab run` wrote into results/<slug>/ against the one committed on the target branch, with
# `klab compare`; its Markdown table goes to the job summary ($GITHUB_STEP_SUMMARY) and stdout.
# results/<slug>/noise.json, where the checkout has one (HEAD's: klab run does not write it), is the
# GPU model's learned run-to-run noise: passed as --noise, as scripts/ci-compare.sh passes HEAD's
# (klab compare does not look for it itself).
# Usage: bash scripts/gpu-gate.sh SLUG TARGET_BRANCH [KLAB]   (KLAB default build/release/klab)
# Exit 0 when nothing regressed (or the target branch has no results/<slug>/bench.json yet, or
# HEAD's commit message accepts it with the trailer `klab-compare: accept`, as scripts/ci-compare.sh
# reads it); 1 when a row regressed or the comparison could not be made.
set -euo pipefail
cd "$(dirname "$0")/.."
slug=${1:?usage: gpu-gate.sh SLUG TARGET_BRANCH [KLAB]}
target=${2:?usage: gpu-gate.sh SLUG TARGET_BRANCH [KLAB]}
klab=${3:-build/release/klab}
summary=${GITHUB_STEP_SUMMARY:-/dev/null}
new=results/$slug/bench.json

say() { printf '%s\n' "$*" | tee -a "$summary"; }

if [[ ! -f $new ]]; then
  say "gpu-gate: $new is missing: klab run wrote no complete study (its log is above; bench.failed.json, where it wrote any output, is in the artifact)"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base="$tmp/${target//\//-}.bench.json"  # klab compare names it: the target branch's committed file
git fetch --quiet --no-tags origin "$target"
if ! git show "FETCH_HEAD:$new" >"$base" 2>/dev/null; then
  say "gpu-gate: the branch $target has no committed $new yet: nothing to compare. Commit the artifact results-$slug" \
      "(this run's results/$slug/) to start its baseline."
  exit 0
fi

say "### $slug: this run against $new on $target ($(git rev-parse --short FETCH_HEAD))"
noise=()
if [[ -f results/$slug/noise.json ]]; then
  noise=(--noise "results/$slug/noise.json")
  echo "gpu-gate: noise file results/$slug/noise.json"
fi
rc=0
"$klab" compare --format md ${noise[@]+"${noise[@]}"} "$base" "$new" >"$tmp/compare.md" || rc=$?
tee -a "$summary" <"$tmp/compare.md"
case $rc in
  0) say "gpu-gate: no regression"; exit 0 ;;
  1) ;;
  *) say "gpu-gate: the comparison could not be made (klab compare exit $rc)"; exit 1 ;;
esac
trailers=$(git log -1 --format='%(trailers:key=klab-compare,valueonly)' HEAD)
if grep -qix '[[:space:]]*accept[[:space:]]*' <<<"$trailers"; then
  say "gpu-gate: a regression, accepted by the trailer \"klab-compare: accept\" of $(git rev-parse --short HEAD)"
  exit 0
fi
say "gpu-gate: REGRESSION against $target. If it is deliberate, explain it in the commit message and add the trailer" \
    "\"klab-compare: accept\"."
exit 1
