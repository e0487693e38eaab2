"""Tables that fit the terminal: one physical line per row, less important columns dropped when it is narrow.

Every cell is kept whole (no wrapping, no `…`): an interval, a trigger name or a timestamp cut mid-way reads as a
different value. When the columns do not fit the console's width, the columns with the highest `drop` rank go
first (0: essential, never dropped) and a dim line under the table names what was left out. Two exceptions, both
declared per column or per table rather than left to rich's wrapping:

- a free-text column (`Col.flex`, e.g. a dead letter's detail) shrinks before any column is dropped, down to its
  `flex` width, and is the only place an ellipsis appears (inside that cell, at its end);
- when even the essential columns do not fit (a long trigger name at 80 columns), each row becomes a block of
  `header  value` lines (`record_table`), so a row is still never wrapped across lines of a grid.

`print_groups` lays out a table whose value columns are alike (one per arm): all of them are shown, in as many
side-by-side groups as the width needs, each repeating the label column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .prose import say


@dataclass(frozen=True, slots=True)
class Col:
    """A column: its header, alignment and drop rank (0 essential; the highest rank is dropped first). `flex` > 0:
    free text that may be shortened (with `…` in the cell) down to `flex` cells before any column is dropped."""

    header: str
    justify: str = "right"
    drop: int = 0
    flex: int = 0


def cell_width(cell: str) -> int:
    """Terminal cells taken by a (rich markup) cell's widest line."""
    return max((Text.from_markup(line).cell_len for line in cell.split("\n")), default=0)


def table_width(widths: Sequence[int]) -> int:
    """Width of a rich table with the default box and padding: each column + 2 spaces, plus the rules."""
    return sum(w + 2 for w in widths) + len(widths) + 1


def natural_widths(cols: Sequence[Col], rows: Sequence[Sequence[str]]) -> list[int]:
    """Each column's width with every cell and the header whole."""
    return [max([cell_width(c.header)] + [cell_width(r[i]) for r in rows]) for i, c in enumerate(cols)]


def _least(col: Col, natural: int) -> int:
    """The narrowest a column may be: its natural width, or for a free-text column its `flex` width."""
    return min(natural, max(col.flex, cell_width(col.header))) if col.flex else natural


def kept_columns(cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int) -> list[int]:
    """Indices of the columns that fit `width` (free-text columns at their narrowest), dropping the highest-ranked
    first (the rightmost of a rank first)."""
    nat = natural_widths(cols, rows)
    least = [_least(c, w) for c, w in zip(cols, nat)]
    keep = list(range(len(cols)))
    order = sorted((i for i, c in enumerate(cols) if c.drop > 0), key=lambda i: (-cols[i].drop, -i))
    for i in order:
        if table_width([least[k] for k in keep]) <= width:
            break
        keep.remove(i)
    return keep


def column_widths(cols: Sequence[Col], rows: Sequence[Sequence[str]], keep: Sequence[int], width: int) -> list[int]:
    """Widths of the kept columns: whole, except free-text ones, which share what `width` leaves (left to right),
    each at least its `flex` width and at most its natural width."""
    nat = natural_widths(cols, rows)
    out = [_least(cols[i], nat[i]) for i in keep]
    spare = width - table_width(out)
    for n, i in enumerate(keep):
        if cols[i].flex and spare > 0:
            grow = min(spare, nat[i] - out[n])
            out[n] += grow
            spare -= grow
    return out


def record_table(cols: Sequence[Col], rows: Sequence[Sequence[str]], keep: Sequence[int], title: str | None = None,
                 **kw: Any) -> Table:
    """Each row as a block of `header  value` lines, blocks separated by a rule: the layout for a width where even
    the essential columns side by side do not fit. The first kept column's value opens each block in bold."""
    kw.pop("show_header", None)
    t = Table(title=title, title_justify="left", show_header=False, **kw)
    t.add_column("", justify="left", no_wrap=True, style="dim")
    t.add_column("", justify="left")
    for n, r in enumerate(rows):
        if n:
            t.add_section()
        for k, i in enumerate(keep):
            if r[i] or k == 0:
                t.add_row(Text(cols[i].header or "(label)"), f"[bold]{r[i]}[/bold]" if k == 0 else r[i])
    return t


def fit_table(console: Console, cols: Sequence[Col], rows: Sequence[Sequence[str]], title: str | None = None,
              sections: Sequence[int] = (), **kw: Any) -> tuple[Table, list[str]]:
    """The rich table of `rows` under `cols` that fits `console.width`, and the headers it left out. `sections`:
    row indices before which a section rule is drawn."""
    keep = kept_columns(cols, rows, console.width)
    widths = column_widths(cols, rows, keep, console.width)
    if table_width(widths) > console.width:  # even the essential columns do not fit side by side: one block a row
        keep = [i for i in keep if cols[i].drop == 0] or keep[:1]
        return record_table(cols, rows, keep, title, **kw), [cols[i].header for i in range(len(cols))
                                                             if i not in keep]
    t = Table(title=title, title_justify="left", **kw)
    for i, w in zip(keep, widths):
        flex = bool(cols[i].flex)
        t.add_column(cols[i].header, justify=cols[i].justify, no_wrap=True,  # type: ignore[arg-type]
                     overflow="ellipsis", width=w if flex else None)
    for n, r in enumerate(rows):
        if n in sections:
            t.add_section()
        t.add_row(*[r[i] for i in keep])
    return t, [cols[i].header for i in range(len(cols)) if i not in keep]


def print_table(console: Console, cols: Sequence[Col], rows: Sequence[Sequence[str]], title: str | None = None,
                sections: Sequence[int] = (), **kw: Any) -> None:
    """Print the fitted table, and which columns the width left out (with how to see them). The title is printed
    above the table as running text wrapped at the console's width (rich would wrap it at the table's, which
    cuts a window's timestamps in two above a narrow table)."""
    t, dropped = fit_table(console, cols, rows, None, sections, **kw)
    if title:
        say(console, title, style="table.title")
    console.print(t)
    if dropped:
        say(console, f"not shown at {console.width} columns: {', '.join(d or '(labels)' for d in dropped)} "
                     "(widen the terminal or use --json)", style="dim")


def column_groups(widths: Sequence[int], width: int) -> list[list[int]]:
    """Value columns 1.. split into consecutive groups that each fit `width` next to the label column 0 (a column
    too wide even alone gets a group of its own)."""
    groups: list[list[int]] = []
    for i in range(1, len(widths)):
        if groups and table_width([widths[0]] + [widths[k] for k in groups[-1]] + [widths[i]]) <= width:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def print_groups(console: Console, cols: Sequence[Col], rows: Sequence[Sequence[str]], title: str | None = None,
                 **kw: Any) -> None:
    """Print a table whose columns after the first are alike (one per arm, say): every column is shown, in as
    many tables side by side as `console.width` needs, each repeating the first (label) column. A group is still
    laid out by `print_table`, so a width too narrow for one value column falls back to blocks."""
    groups = column_groups(natural_widths(cols, rows), console.width)
    for n, g in enumerate(groups):
        part = [0, *g]
        print_table(console, [cols[i] for i in part], [[r[i] for i in part] for r in rows],
                    title if n == 0 else None, **kw)
