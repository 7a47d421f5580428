"""inplace-grader: teach and grade PyTorch in-place semantics.

The library API lives in `grader.engine` (`check_submission`); the CLI in `grader.cli` is a thin
layer over it.
"""

from __future__ import annotations

__version__ = "0.2.0"  # part of each report's hash: a resumed run regrades older reports
