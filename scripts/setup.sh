#!/usr/bin/env bash
# Install inplace-grader and its development tools into the current Python environment.
# torch is installed first, pinned to the CPU wheel, only where no torch is present: the
# package itself accepts a range, so a course's own torch is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c "import torch" >/dev/null 2>&1; then
  "$PYTHON" -m pip install --quiet "torch==2.13.0"
fi
"$PYTHON" -m pip install --quiet --disable-pip-version-check -e ".[dev]"
