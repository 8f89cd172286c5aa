"""Files: making the folder a file goes in, with an error that names what is in the way."""

from __future__ import annotations

import errno
from pathlib import Path

__all__ = ["folder_for"]


def folder_for(path: Path) -> None:
    """Make the folder `path` goes in; a NotADirectoryError naming the part of it that is a
    file (mkdir would say only that it exists)."""
    for folder in (path.parent, *path.parent.parents):
        if folder.exists():
            if not folder.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, "a file, not a folder", str(folder))
            break
    path.parent.mkdir(parents=True, exist_ok=True)
