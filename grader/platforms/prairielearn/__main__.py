"""`python -m grader.platforms.prairielearn`: what the folder's `run` calls for every
submission. It grades ROOT/student into ROOT/results/results.json, always written, and exits
0; only a wrong command line (click's usage error) exits 2."""

from __future__ import annotations

from pathlib import Path

import click

from grader.platforms.prairielearn.autograder import GRADE, run


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=GRADE,
              show_default=True, help="The grading job's folder (student/ and results/).")
@click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False),
              required=True, help="The inplace-grader.toml that `prairielearn init` wrote.")
def main(root: Path, config_path: Path) -> None:
    """Grade ROOT/student into ROOT/results/results.json (always written)."""
    click.echo(f"wrote {run(root, config_path)}")


if __name__ == "__main__":
    main()
