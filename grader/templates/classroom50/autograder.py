"""Classroom 50 autograder for the inplace-grader lab @LAB@ (`inplace-grader classroom50 init`).

The runner calls `python autograder.py` in the student's checkout. This installs the CPU build
of torch and inplace-grader (the wheel beside this file) when they are missing, then grades the
checkout: result.json for the runner, release-body.md for the student. If even the install
fails, it still writes a result.json that says so.
"""

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

LAB = "@LAB@"
TORCH = "@TORCH_VERSION@"
HERE = Path(__file__).resolve().parent


def install() -> None:
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    if importlib.util.find_spec("torch") is None:
        subprocess.run([*pip, f"torch=={TORCH}", "--index-url",
                        "https://download.pytorch.org/whl/cpu"], check=True)
    if importlib.util.find_spec("grader") is None:
        wheels = sorted(HERE.glob("inplace_grader-*.whl"))
        if not wheels:
            raise RuntimeError(f"no inplace_grader wheel beside {Path(__file__).name}")
        subprocess.run([*pip, str(wheels[-1])], check=True)


def setup_failed(reason: str) -> None:
    commit = os.environ.get("COMMIT_URL") or "local"
    result = {
        "schema": "classroom50/result/v1",
        "classroom": os.environ.get("CLASSROOM") or "local",
        "assignment": os.environ.get("ASSIGNMENT") or "local",
        "assignment_type": os.environ.get("ASSIGNMENT_TYPE") or "individual",
        "owner": os.environ.get("OWNER") or os.environ.get("USERNAME") or "local",
        "submission": os.environ.get("SUBMISSION_TAG") or "submit/local",
        "commit": commit,
        "release": os.environ.get("RELEASE_URL") or commit,
        "review": os.environ.get("REVIEW_URL") or commit,
        "datetime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "score": 0, "max-score": 0,
        "tests": [{"test-name": "setup", "passed": False, "score": 0, "max-score": 0,
                   "message": f"the autograder could not be installed: {reason}"}],
    }
    Path("result.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    try:
        install()
    except Exception as exc:  # any failure becomes the result's message
        setup_failed(f"{type(exc).__name__}: {exc}")
        sys.exit(0)
    # -I: the checkout is the student's; a grader/ or torch.py there must not be imported.
    sys.exit(subprocess.run([sys.executable, "-I", "-m", "grader", "classroom50", "run",
                             "--lab", LAB]).returncode)
