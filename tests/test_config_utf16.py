"""A config saved as UTF-16 (a Windows editor's "Unicode") says so and how to convert it: it read only
"not UTF-8 text (byte 0xff on line 1)"."""

from __future__ import annotations

from pathlib import Path

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
        f"config {path}: UTF-16 or UTF-32 text (it starts with the byte-order mark {bom}); the config is UTF-8: save "
        f"it as UTF-8, or convert it: `iconv -f UTF-16 -t UTF-8 '{path}' > '{tmp_path / 'my config-utf8.yaml'}'`")
