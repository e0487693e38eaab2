"""Tables that fit the terminal: one physical line per row, less important columns dropped when it is narrow.

Every cell is kept whole (no wrapping, no `…`): an interval, a trigger name or a timestamp cut mid-way reads as a
different value. When the columns do not fit the console's width, the columns with the highest `drop` rank go
first (0: essential, never dropped) and a dim line under the table names what was left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text


@dataclass(frozen=True, slots=True)
class Col:
    """A column: its header, alignment and drop rank (0 essential; the highest rank is dropped first)."""

    header: str
    justify: str = "right"
    drop: int = 0


def cell_width(cell: str) -> int:
    """Terminal cells taken by a (rich markup) cell's widest line."""
    return max((Text.from_markup(line).cell_len for line in cell.split("\n")), default=0)


def table_width(widths: Sequence[int]) -> int:
    """Width of a rich table with the default box and padding: each column + 2 spaces, plus the rules."""
    return sum(w + 2 for w in widths) + len(widths) + 1


def kept_columns(cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int) -> list[int]:
    """Indices of the columns that fit `width`, dropping the highest-ranked first (the rightmost of a rank first)."""
    widths = [max([cell_width(c.header)] + [cell_width(r[i]) for r in rows]) for i, c in enumerate(cols)]
    keep = list(range(len(cols)))
    order = sorted((i for i, c in enumerate(cols) if c.drop > 0), key=lambda i: (-cols[i].drop, -i))
    for i in order:
        if table_width([widths[k] for k in keep]) <= width:
            break
        keep.remove(i)
    return keep


def fit_table(console: Console, cols: Sequence[Col], rows: Sequence[Sequence[str]], title: str | None = None,
              sections: Sequence[int] = (), **kw: Any) -> tuple[Table, list[str]]:
    """The rich table of `rows` under `cols` that fits `console.width`, and the headers it left out. `sections`:
    row indices before which a section rule is drawn."""
    keep = kept_columns(cols, rows, console.width)
    widths = [max([cell_width(cols[i].header)] + [cell_width(r[i]) for r in rows]) for i in keep]
    whole = table_width(widths) <= console.width  # else even the essential columns wrap (never cut with …)
    t = Table(title=title, title_justify="left", **kw)
    for i in keep:
        t.add_column(cols[i].header, justify=cols[i].justify, no_wrap=whole,  # type: ignore[arg-type]
                     overflow="ellipsis" if whole else "fold")
    for n, r in enumerate(rows):
        if n in sections:
            t.add_section()
        t.add_row(*[r[i] for i in keep])
    return t, [cols[i].header for i in range(len(cols)) if i not in keep]


def print_table(console: Console, cols: Sequence[Col], rows: Sequence[Sequence[str]], title: str | None = None,
                sections: Sequence[int] = (), **kw: Any) -> None:
    """Print the fitted table, and which columns the width left out (with how to see them)."""
    t, dropped = fit_table(console, cols, rows, title, sections, **kw)
    console.print(t)
    if dropped:
        console.print(f"[dim]not shown at {console.width} columns: {', '.join(d or '(labels)' for d in dropped)} "
                      "(widen the terminal or use --json)[/dim]")
