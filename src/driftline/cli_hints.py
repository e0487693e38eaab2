"""Did-you-mean hints for command-line usage mistakes: a misspelt command (`metrcs`) or option (`--windw`), which
argparse reports with the whole list of commands, or only as "unrecognized arguments"."""

from __future__ import annotations

import argparse
import difflib
import re


def choice_hint(message: str) -> str:
    """" (did you mean 'metrics'?)" for argparse's "invalid choice: 'metrcs' (choose from 'replay', …)", '' when
    no choice is close (or the message is another)."""
    m = re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)$", message)
    if not m:
        return ""
    close = difflib.get_close_matches(m.group(1), re.findall(r"'([^']*)'", m.group(2)), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def option_hint(parser: argparse.ArgumentParser, argv: list[str]) -> str:
    """" (unknown option --windw: did you mean --window?)" for the first option in `argv` that neither the program
    nor the command it names (`reference set`) has, when one of theirs is close; '' otherwise."""
    known = [s for a in parser._actions for s in a.option_strings]
    current = parser
    for token in argv:
        sub = next((a for a in current._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is not None and token in sub.choices:
            current = sub.choices[token]
            known += [s for a in current._actions for s in a.option_strings]
    for token in argv:
        if token == "--":
            break
        name = token.split("=", 1)[0]
        if not name.startswith("-") or name in known or re.fullmatch(r"-[\d.]+\w*", name):
            continue
        close = difflib.get_close_matches(name, [k for k in known if k.startswith("--")], n=1, cutoff=0.6)
        return f" (unknown option {name}: did you mean {close[0]}?)" if close else ""
    return ""
