#!/usr/bin/env bash
# The CI regression gate: for every results/<gpu-slug>/bench.json that changed between a base
# revision and HEAD, `klab compare` of the base's version against HEAD's, table printed.
# Usage: bash scripts/ci-compare.sh [KLAB]   (KLAB: the klab binary, default $KLAB or build/ci/klab)
# Base: $KLAB_COMPARE_BASE, default HEAD~1 (the previous commit).
# HEAD's results/<gpu-slug>/noise.json, where there is one, is the GPU model's learned run-to-run
# noise (`klab compare --learn-noise`): passed as --noise. With $KLAB_COMPARE_MARKDOWN set to a
# file, each comparison's Markdown (`klab compare --format md`, for a pull request) is appended to it.
# Exit 0 when nothing regressed, 1 when a comparison found a regression or could not be made.
# A deliberate, explained regression is accepted with the trailer `klab-compare: accept` in
# HEAD's commit message (the last paragraph, as `git interpret-trailers` reads it): the tables
# are still printed, and the gate passes.
set -euo pipefail
cd "$(dirname "$0")/.."
klab=${1:-${KLAB:-build/ci/klab}}
base_rev=${KLAB_COMPARE_BASE:-HEAD~1}

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "ci-compare: not a git checkout, so there is no base to compare with; nothing compared"
  exit 0
fi
# No parent (the first commit) or a shallow clone that lacks the base: nothing to compare with.
if ! base=$(git rev-parse --verify --quiet "${base_rev}^{commit}"); then
  echo "ci-compare: the base revision ${base_rev} is not in this checkout (the first commit, or a shallow clone:" \
       "fetch with --depth 2 or more); nothing compared"
  exit 0
fi

# Added or modified files, one directory level under results/ (deleted ones are only named).
changed=()
while IFS= read -r file; do changed+=("$file"); done < <(git diff --name-only --no-renames --diff-filter=AM "$base" HEAD -- ':(glob)results/*/bench.json')
while IFS= read -r file; do echo "ci-compare: $file: deleted, nothing to compare"; done < <(git diff --name-only --no-renames --diff-filter=D "$base" HEAD -- ':(glob)results/*/bench.json')
if [[ ${#changed[@]} -eq 0 ]]; then
  echo "ci-compare: no results/*/bench.json changed between ${base_rev} and HEAD; nothing compared"
  exit 0
fi
if [[ ! -x $klab ]]; then
  echo "ci-compare: $klab is not an executable; build klab first (cmake --workflow --preset ci) or pass its path"
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=()
compared=0
fresh=0
for file in "${changed[@]}"; do
  slug=$(basename "$(dirname "$file")")
  echo "== $file: $(git rev-parse --short "$base") (${base_rev}) -> $(git rev-parse --short HEAD) (HEAD)"
  if ! git cat-file -e "${base}:${file}" 2>/dev/null; then
    echo "new, nothing to compare"
    fresh=$((fresh + 1))
    continue
  fi
  # Both versions from git, so that the comparison is of what was committed.
  git show "${base}:${file}" >"$tmp/$slug.base.json"
  git show "HEAD:${file}" >"$tmp/$slug.head.json"
  compared=$((compared + 1))
  noise=()
  if git cat-file -e "HEAD:results/$slug/noise.json" 2>/dev/null; then
    git show "HEAD:results/$slug/noise.json" >"$tmp/$slug.noise.json"
    noise=(--noise "$tmp/$slug.noise.json")
    echo "ci-compare: noise file results/$slug/noise.json (HEAD's)"
  fi
  rc=0
  "$klab" compare "${noise[@]}" "$tmp/$slug.base.json" "$tmp/$slug.head.json" || rc=$?
  if [[ -n ${KLAB_COMPARE_MARKDOWN:-} ]]; then
    { echo "### $file"; echo; "$klab" compare --format md "${noise[@]}" "$tmp/$slug.base.json" "$tmp/$slug.head.json" || true; echo; } \
      >>"$KLAB_COMPARE_MARKDOWN"
  fi
  case $rc in
    0) ;;
    1) failed+=("$file: regression") ;;
    *) failed+=("$file: could not be compared (klab compare exit code $rc)") ;;
  esac
  echo
done

if [[ ${#failed[@]} -eq 0 ]]; then
  echo "ci-compare: no regression (${compared} file(s) compared, ${fresh} new)"
  exit 0
fi
trailers=$(git log -1 --format='%(trailers:key=klab-compare,valueonly)' HEAD)
if grep -qix '[[:space:]]*accept[[:space:]]*' <<<"$trailers"; then
  printf 'ci-compare: accepted by the commit trailer "klab-compare: accept": %s\n' "${failed[@]}"
  exit 0
fi
printf 'ci-compare: FAILED: %s\n' "${failed[@]}"
echo "ci-compare: if this is deliberate, explain it in the commit message and add the trailer \"klab-compare: accept\""
exit 1
