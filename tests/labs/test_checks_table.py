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
