"""Runs reproducers as a student would, in one fresh interpreter: `python reproducers_runner.py
REPRODUCERS.json OUTCOMES.json MODULE`, in the folder that holds the student's MODULE.py.

Each reproducer runs in its own namespace, with MODULE imported afresh (a reproducer must not
depend on what another left in the module); its outcome is "ok", "AssertionError", or the type
and message of whatever else it raised. Outcomes go to a file: the student's code may print.
"""

from __future__ import annotations

import json
import sys
import warnings


def main() -> None:
    source, target, module = sys.argv[1:4]
    sys.path.insert(0, ".")
    with open(source, encoding="utf-8") as handle:
        reproducers: dict[str, str] = json.load(handle)
    outcomes = {}
    warnings.simplefilter("ignore")
    for name, code in reproducers.items():
        sys.modules.pop(module, None)
        try:
            exec(compile(code, name, "exec"), {"__name__": "__main__"})
        except AssertionError:
            outcomes[name] = "AssertionError"
        except BaseException as exc:  # what a student would see instead of the assertion
            outcomes[name] = f"{type(exc).__name__}: {exc}"[:500]
        else:
            outcomes[name] = "ok"
    with open(target, "w", encoding="utf-8") as handle:
        json.dump(outcomes, handle)


if __name__ == "__main__":
    main()
