"""A config saved as UTF-16 (a Windows editor's "Unicode") says so and how to convert it: it read only
"not UTF-8 text (byte 0xff on line 1)"."""

from __future__ import annotations

from pathlib import Path
from shlex import quote

import pytest

from driftline.config import ConfigError, load


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_a_utf16_config_is_named_with_the_conversion(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "my config.yaml"
    text = "model: fraud\n"
    path.write_bytes(("\ufeff" + text).encode(encoding) if encoding.endswith("be") else text.encode(encoding))
    with pytest.raises(ConfigError) as err:
        load(path)
    bom = "FF FE" if encoding == "utf-16" else "FE FF"
    assert str(err.value) == (
        f"config {path}: UTF-16 text (it starts with the byte-order mark {bom}); the config is UTF-8: save "
        f"it as UTF-8, or convert it: `iconv -f UTF-16 -t UTF-8 '{path}' > '{tmp_path / 'my config-utf8.yaml'}'`")


@pytest.mark.parametrize("encoding, name, how", [
    ("utf-32", "UTF-32", "it starts with the byte-order mark FF FE 00 00"),
    ("utf-16-le", "UTF-16LE", "no byte-order mark, a NUL byte after every character"),
    ("utf-16-be", "UTF-16BE", "no byte-order mark, a NUL byte before every character")])
def test_a_utf32_or_bomless_utf16_config_gets_the_iconv_line_for_its_encoding(tmp_path: Path, encoding: str,
                                                                             name: str, how: str) -> None:
    """Verification tryout: a UTF-32 config was named "UTF-16 or UTF-32" with `iconv -f UTF-16`, whose output has a
    NUL after every character; a UTF-16 one without a byte-order mark read "unacceptable character #x0000"."""
    path = tmp_path / "c.yaml"
    path.write_bytes("model: fraud\n".encode(encoding))
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(err.value) == (f"config {path}: {name} text ({how}); the config is UTF-8: save it as UTF-8, or "
                              f"convert it: `iconv -f {name} -t UTF-8 {quote(str(path))} > {quote(str(tmp_path / 'c-utf8.yaml'))}`")
