"""PostgreSQL binary arrays of a batch's columns built in bulk (numpy, bytes joins) instead of by psycopg's list
dumper, which spends microseconds of Python per element; the hot path's unnest statements send ~12 such columns per
batch. Any column it cannot encode exactly as psycopg would (a value of another type, a bound exceeded, a client
encoding other than UTF-8) is left as the plain list for psycopg.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
from psycopg.adapt import Dumper
from psycopg.pq import Format

ELEMENT_OIDS = {"bool": 16, "int2": 21, "int4": 23, "int8": 20, "float8": 701, "text": 25}
_ARRAY_OIDS = {"bool": 1000, "int2": 1005, "int4": 1007, "int8": 1016, "float8": 1022, "text": 1009}
_NUMPY = {"bool": "?", "int2": ">i2", "int4": ">i4", "int8": ">i8", "float8": ">f8"}
_PY_TYPE = {"bool": bool, "int2": int, "int4": int, "int8": int, "float8": float}
_BOUNDS = {"int2": 2**15, "int4": 2**31, "int8": 2**63}
_PACK = {"bool": struct.Struct(">i?"), "int2": struct.Struct(">ih"), "int4": struct.Struct(">ii"),
         "int8": struct.Struct(">iq"), "float8": struct.Struct(">id")}
_NULL = struct.pack(">i", -1)
_LEN = struct.Struct(">i").pack


class Encoded:
    """A one-dimensional array already in PostgreSQL's binary array format (dumped as is)."""

    __slots__ = ("data",)
    kind = ""

    def __init__(self, data: bytes) -> None:
        self.data = data


def _classes(kind: str) -> tuple[type[Encoded], type[Dumper]]:
    enc = type(f"Encoded_{kind}", (Encoded,), {"__slots__": (), "kind": kind})

    class _Dumper(Dumper):
        format = Format.BINARY
        oid = _ARRAY_OIDS[kind]

        def dump(self, obj: Any) -> bytes:
            return obj.data  # type: ignore[no-any-return]

    return enc, _Dumper


_CLASSES = {kind: _classes(kind) for kind in _ARRAY_OIDS}


def register(dbapi_conn: Any) -> None:
    """Teach one psycopg connection to send Encoded arrays (a connect hook: no global adapter state)."""
    for enc, dumper in _CLASSES.values():
        dbapi_conn.adapters.register_dumper(enc, dumper)


def _header(kind: str, n: int, has_null: bool) -> bytes:
    if n == 0:
        return struct.pack(">iiI", 0, 0, ELEMENT_OIDS[kind])
    return struct.pack(">iiIii", 1, int(has_null), ELEMENT_OIDS[kind], n, 1)


def encode(values: list[Any], kind: str, utf8: bool) -> Any:
    """`values` as an Encoded array of `kind`, or `values` itself when psycopg should dump them."""
    if not values:
        return values
    kinds = set(map(type, values))  # C-level passes over the column (no per-element Python frame)
    if kind == "text":
        if not utf8 or kinds != {str} or "\x00" in "".join(values):
            return values
        try:
            parts = list(map(str.encode, values))
        except UnicodeEncodeError:
            return values
        body = b"".join(map(b"".join, zip(map(_LEN, map(len, parts)), parts)))
        return _CLASSES[kind][0](_header(kind, len(parts), False) + body)
    if not kinds <= {_PY_TYPE[kind], type(None)}:
        return values
    bound = _BOUNDS.get(kind)
    present = values if type(None) not in kinds else [v for v in values if v is not None]
    if bound is not None and present and not (-bound <= min(present) and max(present) < bound):
        return values
    size = np.dtype(_NUMPY[kind]).itemsize
    if len(present) == len(values):
        arr = np.empty(len(values), dtype=[("n", ">i4"), ("v", _NUMPY[kind])])
        arr["n"] = size
        arr["v"] = values
        return _CLASSES[kind][0](_header(kind, len(values), False) + arr.tobytes())
    pack = _PACK[kind].pack
    body = b"".join([_NULL if v is None else pack(size, v) for v in values])
    return _CLASSES[kind][0](_header(kind, len(values), True) + body)
