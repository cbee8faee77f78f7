"""Console output shared by the CLI and calibrate: one table printer (rich, or plain text without it)."""

from __future__ import annotations

import sys
from typing import Sequence

__all__ = ["console", "table"]


def console():
    try:
        from rich.console import Console

        # not a terminal (a log, a pipe, a test): wide enough that no table ever folds a cell or a
        # header, so every row and column name stays one greppable token (tables do not expand)
        return Console(highlight=False, width=None if sys.stdout.isatty() else 1000)
    except ImportError:  # pragma: no cover - rich is a declared dependency
        return None


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    con = console()
    if con is None:
        print(title)
        print("  ".join(columns))
        for r in rows:
            print("  ".join(str(x) for x in r))
        return
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for i, c in enumerate(columns):
        # the first column names the row (a problem such as 1024x1024x1024): never wrapped, so it
        # stays one greppable token in a narrow or non-terminal console; the others fold
        t.add_column(c, overflow="fold", no_wrap=i == 0)
    for r in rows:
        t.add_row(*[str(x) for x in r])
    con.print(t)
