#!/usr/bin/env bash
# Runs a command with a CPU hog beside it: one busy process per core at the lowest priority (nice 19), started
# here and stopped when the command ends, fails or is interrupted. The test tiers run this way so that a test
# which only passes on an idle CPU fails here first, not on a user's busy machine or a board.
#   scripts/with-cpu-hog.sh <command> [args…]       MNN_EDGE_TEST_HOG=0 runs the command without the hog.
set -uo pipefail
if [ "$#" -eq 0 ]; then
  echo "usage: $0 <command> [args…]" >&2
  exit 2
fi
if [ "${MNN_EDGE_TEST_HOG:-1}" = "0" ]; then
  exec "$@"
fi
cores=$(nproc)
pids=()
stop_hog() {
  # Only the processes started here, by their ids.
  ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null
  ((${#pids[@]})) && wait "${pids[@]}" 2>/dev/null
  pids=()
}
trap stop_hog EXIT
trap 'stop_hog; exit 130' INT
trap 'stop_hog; exit 143' TERM
for ((i = 0; i < cores; i++)); do
  # The 6-hour timeout only matters if this script itself is SIGKILLed and cannot stop the hog.
  nice -n 19 timeout 6h bash -c 'while :; do :; done' &
  pids+=("$!")
done
echo "cpu hog: ${cores} busy process(es) at nice 19 (pids ${pids[*]}) while: $*" >&2
"$@"
rc=$?
stop_hog
echo "cpu hog stopped" >&2
exit "$rc"
