"""docs/adding-a-lab.md, proven: a lab written into a folder outside the package (the files
that page lists, no more) is found through INPLACE_GRADER_LABS, meets the lab contract, and
grades a file end to end through the public API, the sandbox's zygote and children included.

The lab, `scale`, has one function, `scale_(x, a)`, which must multiply `x` by `a` in place and
return it. Its checks are shared rules (checks/core.py) and its check names the catalog's
`*.<check>` patterns, so it needs no catalog entry of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grader.sandbox.probes_contract import LABS_VARIABLE, LabFolderError, lab_folders
from tests.conftest import ROOT

LAB = {
    "__init__.py": '''
        """Lab `scale` (file `scale.py`): one function that scales a tensor in place."""

        FILENAME = "scale.py"
        ''',
    "plan.py": '''
        """Lab scale's plan: its function, its cases and its signature (the child may import
        this: no expected values)."""

        from __future__ import annotations

        from grader.labs.scale.inputs import Case

        FUNCTIONS = ("scale_",)
        SIGNATURES: dict[str, list[tuple[str, str | None]]] = {"scale_": [("x", None), ("a", None)]}


        def lab_cases(function: str) -> list[Case]:
            return [{"id": "float32", "dtype": "float32", "shape": [3, 4], "a": 2.5, "seed": 1},
                    {"id": "float64", "dtype": "float64", "shape": [5], "a": -0.5, "seed": 2}]
        ''',
    "inputs.py": '''
        """Seeded inputs, the same in the child and in the grading process."""

        from __future__ import annotations

        from typing import Any

        import torch

        from grader.checks.dtypes import DTYPES

        Case = dict[str, Any]


        def build_x(case: Case, device: str) -> torch.Tensor:
            generator = torch.Generator().manual_seed(case["seed"])
            drawn = torch.randn(case["shape"], generator=generator, dtype=torch.float64)
            return drawn.to(DTYPES[case["dtype"]]).to(device)


        def witnessed(function: str, case: Case) -> list[tuple[str, tuple[int, ...]]]:
            return []  # no outside witness: the record alone is judged
        ''',
    "probes.py": '''
        """Child side of lab scale: call scale_ on each case and record what happened."""

        from __future__ import annotations

        from types import ModuleType
        from typing import Any

        from grader.checks import tensors
        from grader.checks.api import describe_module
        from grader.labs.scale.inputs import Case, build_x
        from grader.labs.scale.inputs import witnessed as witnessed
        from grader.labs.scale.plan import FUNCTIONS as FUNCTIONS
        from grader.sandbox.child import call_student
        from grader.sandbox.outside_meter import NO_METER, OutsideMeter
        from grader.sandbox.probing import run_cases
        from grader.sandbox.witness import NO_ARENA, Arena


        def warm_up() -> None:
            """Nothing to pay once: the inputs are small."""


        def describe_api(module: ModuleType) -> dict[str, Any]:
            return describe_module(module, FUNCTIONS)


        def probe(module: ModuleType, function: str, *, device: str, cases: list[Case],
                  arena: Arena = NO_ARENA, meter: OutsideMeter = NO_METER) -> dict[str, Any]:
            return {"cases": run_cases(module, function, cases,
                                       lambda target, case: _probe(target, case, device))}


        def _probe(scale_: Any, case: Case, device: str) -> dict[str, Any]:
            x = build_x(case, device)
            alias = tensors._detach(x)
            before = tensors.state(x)
            returned, error = call_student(scale_, x, case["a"])
            return {"error": error, "returned_is_x": returned is x,
                    "returned_type": type(returned).__name__, "state_before": before,
                    "state_after": tensors.state(x), "values": tensors.values(x),
                    "alias_values": tensors.values(alias)}
        ''',
    "judge.py": '''
        """Grading-process side of lab scale: the checks table."""

        from __future__ import annotations

        from pathlib import Path
        from typing import Any

        from grader.checks.core import (
            every_case,
            judge_cases,
            storage_kept,
            values_close,
            version_advanced,
        )
        from grader.checks.findings import Finding, fail
        from grader.labs.base import CheckSpec, Lab, signature_judge
        from grader.labs.scale import FILENAME
        from grader.labs.scale.inputs import Case, build_x
        from grader.labs.scale.plan import FUNCTIONS, SIGNATURES, lab_cases


        def _returns_x(case: Case, observed: dict[str, Any]) -> Finding | None:
            if not observed["returned_is_x"]:
                return fail("not_returned", function="scale_", tensor="x", where=case["id"],
                            got=observed["returned_type"])
            return None


        def _storage(case: Case, observed: dict[str, Any]) -> Finding | None:
            return storage_kept("scale_", "x", observed["state_before"], observed["state_after"],
                                observed["alias_values"], observed["values"])


        def _version(case: Case, observed: dict[str, Any]) -> Finding | None:
            return version_advanced("scale_", "x", observed["state_before"],
                                    observed["state_after"])


        def _values(case: Case, observed: dict[str, Any]) -> Finding | None:
            expected = build_x(case, "cpu") * case["a"]
            return values_close(observed["values"], expected, tensor="x", where=case["id"])


        DID = ("scale_.values", "scale_.version_advances")
        LAB = Lab(
            name="scale",
            filename=FILENAME,
            functions=FUNCTIONS,
            checks=(
                CheckSpec("scale_.signature", "api", signature_judge(
                    "scale_", kind="function", parameters=SIGNATURES["scale_"]),
                          per_device=False),
                CheckSpec("scale_.returns_input", "identity",
                          judge_cases("scale_", every_case, _returns_x), shown_by=DID),
                CheckSpec("scale_.same_memory", "storage",
                          judge_cases("scale_", every_case, _storage), shown_by=DID),
                CheckSpec("scale_.version_advances", "version",
                          judge_cases("scale_", every_case, _version)),
                CheckSpec("scale_.values", "numerics", judge_cases("scale_", every_case, _values)),
            ),
            cases=lab_cases,
            forbidden_package="",
            rubric_path=Path(__file__).with_name("rubric.toml"),
        )
        ''',
    "rubric.toml": '''
        # Points per check of lab `scale`.
        lab = "scale"

        [points]
        "scale_.signature" = 1
        "scale_.returns_input" = 2
        "scale_.same_memory" = 2
        "scale_.version_advances" = 2
        "scale_.values" = 3
        ''',
}
RIGHT = "def scale_(x, a):\n    return x.mul_(a)\n"
WRONG = "def scale_(x, a):\n    return x * a\n"  # a new tensor; x untouched

# Run in a fresh interpreter, as a course would: the variable is read when grader.labs is
# first imported (there, in the sandbox's worker and in its children).
SCRIPT = """
import json, sys
from pathlib import Path
from grader.engine import CheckOptions, check_submission
from grader.models import Limits
from grader.sandbox import Sandbox
from tests.labs.test_contract import contract_problems

options = CheckOptions(device="cpu", lang="en", limits=Limits(timeout_s=30))
with Sandbox(["scale"]) as sandbox:  # its worker boots while this process imports the lab
    print(json.dumps(contract_problems("scale")))
    for path in sys.argv[1:]:  # no lab given: the file name tells it
        print(check_submission(Path(path), options=options, sandbox=sandbox).model_dump_json())
"""


def write_lab(folder: Path) -> Path:
    lab = folder / "scale"
    lab.mkdir(parents=True)
    for name, text in LAB.items():
        (lab / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return folder


def test_a_lab_outside_the_package_grades_a_file(tmp_path: Path) -> None:
    labs = write_lab(tmp_path / "course labs")  # a space: the variable is not split on it
    files = []
    for name, source in (("right", RIGHT), ("wrong", WRONG)):
        (tmp_path / name).mkdir()
        files.append(tmp_path / name / "scale.py")
        files[-1].write_text(source)
    env = {**os.environ, LABS_VARIABLE: str(labs), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", SCRIPT, *map(str, files)], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    problems, right, wrong = (json.loads(line) for line in done.stdout.splitlines()[-3:])
    assert problems == []
    assert right["lab"] == "scale" and right["score"] == right["max_score"] == 10, right
    status = {check["id"]: check["status"] for check in wrong["checks"]
              if check["device"] != "cuda"}  # graded on the CPU only: cuda rows are skipped
    assert status["scale_.returns_input"] == status["scale_.values"] == "failed", status
    assert status["scale_.signature"] == "passed" and wrong["score"] < 10
    returned = next(c for c in wrong["checks"] if c["id"] == "scale_.returns_input")
    assert returned["name"] == "scale_ returns its argument itself"  # the catalog's pattern


def test_the_variable_names_folders_and_nothing_else(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path)
    assert lab_folders({}) == []
    both = {LABS_VARIABLE: f"a{os.pathsep}{os.pathsep}{tmp_path / 'b'}"}
    assert lab_folders(both) == [tmp_path / "a", tmp_path / "b"]  # made absolute
    with pytest.raises(LabFolderError, match=r"'missing' is not a folder.*adding-a-lab\.md"):
        lab_folders({LABS_VARIABLE: f"a{os.pathsep}missing"})


def test_the_sandbox_worker_gets_the_folders_absolute_and_trusts_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from grader.sandbox.limits import python_paths
    from grader.sandbox.runner import child_environment

    labs = write_lab(tmp_path / "labs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(LABS_VARIABLE, "labs")
    assert child_environment()[LABS_VARIABLE] == str(labs)
    assert labs in python_paths()  # the audit hook's trusted roots, the child's view


@pytest.mark.parametrize("mistake,said", [
    ("same_name", "a lab named 'optim' is already in"),
    ("no_filename", "declares no FILENAME"),
])
def test_a_lab_folder_mistake_is_one_line_before_anything_runs(
        tmp_path: Path, mistake: str, said: str) -> None:
    lab = tmp_path / ("optim" if mistake == "same_name" else "scale")
    lab.mkdir()
    (lab / "__init__.py").write_text('FILENAME = "x.py"\n' if mistake == "same_name" else "")
    env = {**os.environ, LABS_VARIABLE: str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "grader", "checks", "--lab", "optim"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
