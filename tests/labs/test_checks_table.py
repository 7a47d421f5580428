"""Every lab's checks table holds together: what a check is `shown_by` is a check of the same
function that the lab declares, and never the check itself."""

from __future__ import annotations

import pytest

from grader.labs import LAB_FILES, get_lab


@pytest.mark.parametrize("name", sorted(LAB_FILES))
def test_shown_by_names_checks_of_the_same_function(name: str) -> None:
    lab = get_lab(name)
    ids = {check.id: check for check in lab.checks}
    for check in lab.checks:
        for need in check.shown_by:
            assert need in ids, f"{check.id}: no check {need}"
            assert need != check.id and ids[need].function == check.function, (check.id, need)
            assert ids[need].per_device == check.per_device, (check.id, need)


def test_probes_import_no_judge_and_no_reference() -> None:
    """The child imports each lab's probes (and warms them up in the zygote): neither may
    bring in grading code, which would sit beside student code. Run in a fresh interpreter."""
    import subprocess
    import sys

    script = (
        "import importlib, sys\n"
        f"for lab in {sorted(LAB_FILES)!r}:\n"
        "    importlib.import_module(f'grader.labs.{lab}.probes').warm_up()\n"
        "print(sorted(m for m in sys.modules if m.startswith('grader.labs.')\n"
        "             and m.endswith(('.judge', '.reference'))))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
