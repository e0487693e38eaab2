"""The report's identifier filters keep escaping while they add `<wbr>` after `_`, `.` and `-`."""

from __future__ import annotations

from markupsafe import Markup

from driftline.reports.wrapping import ident, idents


def test_ident_breaks_after_separators_and_escapes_each_piece() -> None:
    got = ident("<b>card_present.v2-x</b>")
    assert isinstance(got, Markup)
    assert str(got) == "&lt;b&gt;card_<wbr>present.<wbr>v2-<wbr>x&lt;/b&gt;"
    assert str(ident("a_\x1b[31m")) == "a_<wbr>\\x1b[31m"  # control characters shown as escapes, as elsewhere
    assert ident(None) is None and ident(0.5) == 0.5 and ident(Markup("<i>x_y</i>")) == Markup("<i>x_y</i>")
    assert str(ident("trailing_")) == "trailing_"  # no <wbr> after the last character


def test_idents_touches_only_identifier_tokens_of_prose() -> None:
    got = str(idents("Recall is 0.456 [0.415, 0.498]; alert recall_below_target firing since 2026-11-28 & <x>"))
    assert got == ("Recall is 0.456 [0.415, 0.498]; alert recall_<wbr>below_<wbr>target firing since 2026-11-28 "
                   "&amp; &lt;x&gt;")
    assert str(idents("feature amount.v2 drifted")) == "feature amount.<wbr>v2 drifted"


def test_a_quoted_command_is_never_broken() -> None:
    """On-call tryout: the provisional banner's `driftline report --week 2026-W48` broke after its first `-` on a
    phone; a quoted command gets no <wbr> and the class the template keeps on one line."""
    from pathlib import Path

    import driftline.reports.render as render

    got = str(idents("Re-run `driftline report --week 2026-W48` once labels have matured (`labels.horizon`)."))
    assert '<code class="cmd">driftline report --week 2026-W48</code>' in got and got.count("<wbr>") == 1, got
    assert "<code>labels.<wbr>horizon</code>" in got
    assert str(idents("`a <b> c`")) == '<code class="cmd">a &lt;b&gt; c</code>'  # escaped as ever
    template = Path(render.__file__).parent.parent / "templates" / "report.html.j2"
    assert "code.cmd { white-space: nowrap; }" in template.read_text()
