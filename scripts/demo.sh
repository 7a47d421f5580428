#!/usr/bin/env bash
# The main job on the bundled examples: check a correct and a buggy submission to lab `optim`.
# Exits 0 when the correct one gets full marks and the buggy one is caught (exit 1).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
echo "== examples/optim/correct/optimizer.py"
"$PYTHON" -m grader check examples/optim/correct/optimizer.py --lang "${GRADER_LANG:-en}"
correct=$?
echo
echo "== examples/optim/buggy/optimizer.py"
"$PYTHON" -m grader check examples/optim/buggy/optimizer.py --lang "${GRADER_LANG:-en}"
buggy=$?
if [[ $correct -eq 0 && $buggy -eq 1 ]]; then
  echo; echo "demo: the correct example passed and the buggy one was caught, as expected."
else
  echo "demo: unexpected exit codes (correct=$correct, buggy=$buggy)" >&2; exit 1
fi
