"""The store's own JSON files (the failure database's entries, the corpora) read back
strictly: a file that is not one lockharness wrote is bad input naming it and the key."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import msgspec

from lockharness.core.errors import BadInput
from lockharness.core.typed_input import Invalid, convert
from lockharness.core.yaml_read import read_input_file

_Record = TypeVar("_Record", bound=msgspec.Struct)


def read_record_file(
    path: Path, tp: type[_Record], most: int, what: str, fmt: int | tuple[int, ...]
) -> _Record:
    """``path`` as a ``tp`` of format ``fmt`` (or one of them), at most ``most`` bytes;
    ``what`` names the kind of file in the messages ("a corpus")."""
    text = read_input_file(path, str(path), most, what)
    try:
        record: _Record = convert(msgspec.json.decode(text), tp)
    except msgspec.DecodeError as e:
        raise BadInput(f"{path}: not JSON ({e}); allowed: {what} lockharness wrote") from None
    except Invalid as e:
        raise BadInput(f"{path}: {e}; allowed: {what} lockharness wrote") from None
    formats = fmt if isinstance(fmt, tuple) else (fmt,)
    if getattr(record, "format", None) not in formats:
        allowed = ", ".join(map(str, formats))
        raise BadInput(f"{path}: format: {getattr(record, 'format', None)!r}; allowed: {allowed}")
    return record
