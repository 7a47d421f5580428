#!/usr/bin/env bash
# The main job on the bundled example class: grade a dozen students of lab `optim` (correct and
# buggy files, a notebook, an empty file, a syntax error), then show the gradebook.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
OUT=${OUT:-out/example-class}
"$PYTHON" -m grader grade examples/optim/class --lab optim --out "$OUT" --lang "${GRADER_LANG:-en}"
echo
echo "== $OUT/gradebook.csv"
cat "$OUT/gradebook.csv"
echo
echo "Per-student feedback: $OUT/feedback/; JSON reports: $OUT/reports/."
echo "One student, as they would check it themselves:"
"$PYTHON" -m grader check examples/optim/buggy/optimizer.py --lang "${GRADER_LANG:-en}" || test $? -eq 1
