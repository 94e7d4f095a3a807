"""The project's `.env` files, kept up to date between calls without walking the project
again: the first search records each folder it looked in with its mtime; at each call a
folder whose mtime moved (an entry was created, removed or renamed in it) is looked at again,
with any new folder below it. A `.env` made mid-session is hidden from the next call.

The cost is one stat per folder searched (at most profile.DOTENV_DIRS), not a walk."""

from __future__ import annotations

import os
from pathlib import Path

from tuiapp.security import hidden as hidden_list


class DotenvIndex:
    def __init__(self, root: Path) -> None:
        from tuiapp.security.sandbox import profile

        self.root, self.depth = root, profile.DOTENV_DEPTH
        self.max_dirs, self.skip = profile.DOTENV_DIRS, profile.SKIP_DIRS
        self.folders: dict[Path, tuple[int, int]] = {}  # folder → (mtime_ns, depth)
        self.found: dict[Path, set[Path]] = {}  # folder → its `.env` files
        self._scan(root, 0)

    def files(self) -> list[Path]:
        return sorted(p for ps in self.found.values() for p in ps)

    def refresh(self) -> bool:
        """Look again in the folders that changed; True when the list of files changed."""
        before = self.files()
        for folder, (mtime, depth) in list(self.folders.items()):
            try:
                now = os.stat(folder).st_mtime_ns
            except OSError:
                now = -1
            if now != mtime:
                self._scan(folder, depth)
        return self.files() != before

    def _scan(self, top: Path, depth: int) -> None:
        todo = [(top, depth)]
        while todo:
            folder, d = todo.pop()
            if folder not in self.folders and len(self.folders) >= self.max_dirs:
                continue
            try:
                mtime = os.stat(folder).st_mtime_ns
                entries = list(os.scandir(folder))
            except OSError:
                self.folders.pop(folder, None)
                self.found.pop(folder, None)
                continue
            self.folders[folder] = (mtime, d)
            self.found[folder] = set()
            for e in entries:
                if hidden_list.is_dotenv_name(e.name):
                    self.found[folder].add(Path(e.path))
                elif (d < self.depth and e.name not in self.skip
                      and e.is_dir(follow_symlinks=False) and Path(e.path) not in self.folders):
                    todo.append((Path(e.path), d + 1))
