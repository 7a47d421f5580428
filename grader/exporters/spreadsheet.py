"""CSV cells a spreadsheet would run: a student named `=HYPERLINK(...)` stays a name.

Excel, LibreOffice and Google Sheets evaluate a cell that starts with `=`, `+`, `-` or `@` (and
some also after a tab or carriage return) as a formula when an instructor opens a CSV export.
Every CSV this grader writes passes its text cells through `safe_row`: such a cell gets a
leading apostrophe, which spreadsheets show as text (OWASP's advice for CSV injection). Numbers
(scores, points) are left as they are.
"""

from __future__ import annotations

from collections.abc import Iterable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> object:
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value  # a number such as -0.5 is not a formula


def safe_row(values: Iterable[object]) -> list[object]:
    return [safe_cell(value) for value in values]
