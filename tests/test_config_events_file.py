"""A file of events given as the config (`--config events.jsonl`, arguments swapped) says so: it read only as
"not valid YAML at line 2 … expected '<document start>'" (two events or more) or "unknown field `type`" (one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driftline.config import ConfigError, load

HINT = ("(this looks like a file of events, one JSON object a line: --config takes the YAML settings file; events "
        "are fed with `driftline replay FILE`)")
EVENT = {"type": "prediction", "prediction_id": "p1", "ts": "2026-11-02T00:00:00Z", "model": "fraud", "score": 0.3}


@pytest.mark.parametrize("lines", [1, 3])
def test_an_events_file_as_the_config_is_named_as_such(tmp_path: Path, lines: int) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps({**EVENT, "prediction_id": f"p{i}"}) + "\n" for i in range(lines)))
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(err.value).endswith(HINT)


def test_a_config_in_json_is_not_taken_for_events(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"modle": "fraud"}))
    with pytest.raises(ConfigError) as err:
        load(path)
    assert "unknown field `modle`" in str(err.value) and "events" not in str(err.value)
