#!/usr/bin/env bash
# The figure issue 31 asks for: the README's test command (`npm test`) timed with the CPU hog beside the
# hog'd tiers (as CI runs it) and without it (MNN_EDGE_TEST_HOG=0), one after the other on the same machine,
# each with its result and its ava summary lines. Order alternates with ROUNDS > 1 so that a machine growing
# busier or quieter during the run does not favour one side.
#   scripts/suite-hog-figures.sh [ROUNDS]   logs in ${SUITE_FIGURES_DIR:-/tmp/suite-hog-figures}
set -uo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-1}"
out="${SUITE_FIGURES_DIR:-/tmp/suite-hog-figures}"
mkdir -p "$out"
run_one() { # $1 = 1 (hog) or 0 (no hog), $2 = round
  local log="$out/hog$1-round$2.log" start end rc
  start=$(date +%s)
  MNN_EDGE_TEST_HOG="$1" npm test >"$log" 2>&1
  rc=$?
  end=$(date +%s)
  local summary
  summary=$(grep -E '^\s+[0-9]+ (tests? (passed|failed)|known failures?|tests? skipped|tests? todo)' "$log" | tr -s ' ' | paste -sd, -)
  printf '%s hog=%s round=%s exit=%s wall=%ss load=%s %s\n' "$(date -u +%H:%M:%S)" "$1" "$2" "$rc" \
    "$((end - start))" "$(cut -d' ' -f1-3 /proc/loadavg)" "$summary" | tee -a "$out/figures.txt"
}
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then run_one 1 "$r"; run_one 0 "$r"; else run_one 0 "$r"; run_one 1 "$r"; fi
done
