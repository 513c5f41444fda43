"""Files a reader may open at any moment (reports, records, indexes): written whole beside
their place, then renamed into it, so that a reader, a merge, or the next night sees the
last whole version, never half of a new one; and the disk-full error told apart."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

# A full disk or a spent quota: the store cannot take more, whatever is written next.
_FULL = (errno.ENOSPC, errno.EDQUOT)


def write_atomically(path: Path, data: bytes) -> None:
    """Whole, then renamed into place; on failure (a full disk) the old file is untouched
    and no temporary file is left beside it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def disk_full(error: BaseException) -> bool:
    """``error`` says the file system has no room left (ENOSPC, EDQUOT)."""
    return isinstance(error, OSError) and error.errno in _FULL
