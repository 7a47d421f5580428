"""inplace-grader: teach and grade PyTorch in-place semantics.

The library API lives in `grader.engine` (`check_submission`); the CLI in `grader.cli` is a thin
layer over it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__version__ = "0.2.0"  # part of each report's hash: a resumed run regrades older reports


def checkout_root() -> Path:
    """The project folder this package runs from (it holds solutions/ beside grader/: a
    checkout, or the editable install `scripts/setup.sh` makes), else the working directory:
    what the builders' `--root` defaults to, so they work from any folder."""
    from pathlib import Path

    here = Path(__file__).resolve().parent.parent
    return here if (here / "solutions").is_dir() and (here / "grader").is_dir() else Path(".")
