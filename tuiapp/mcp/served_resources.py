"""The project's files as MCP resources (`kep mcp serve --resources`), read-only.

Reading goes through the one project-file reader with the project root as confinement: a
path that resolves outside the root (`..`, a link out), a `.env` (or a hard link to it),
kep's own folders and credential stores are refused there. On top of that no hidden path
(any part starting with `.`: `.git`, `.ssh`, `.env.local`) is listed or read, only regular
files are (a FIFO would block), nothing over READ_CAP, and what is read passes the secrets
filter: text is redacted, a binary file holding a secret is not served at all.

Listing walks the root without following links, skipping hidden and bulky folders, up to
LIST_CAP files, in pages. URIs are `file://` URIs of the files' real paths.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import stat
from pathlib import Path
from urllib.parse import unquote, urlsplit

import mcp.types as types
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from tuiapp.security import project_files, secrets

READ_CAP = 4 * 1024 * 1024
LIST_CAP = 5000
PAGE = 500
SKIP_DIRS = frozenset({"__pycache__", "node_modules"})
RESOURCE_NOT_FOUND = -32002  # the MCP spec's code for a resource that cannot be read


class ProjectResources:
    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))
        self._given = Path(os.path.abspath(root))  # a client may name it as the user did

    # ---- listing -------------------------------------------------------------------------

    def files(self) -> list[Path]:
        out: list[Path] = []
        stack = [self.root]
        while stack and len(out) < LIST_CAP:
            folder = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            subdirs = []
            for entry in entries:
                if entry.name.startswith(".") or not _plain_name(entry.name):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode) and entry.name not in SKIP_DIRS:
                    subdirs.append(Path(entry.path))
                elif stat.S_ISREG(st.st_mode) and st.st_size <= READ_CAP:
                    out.append(Path(entry.path))
                    if len(out) >= LIST_CAP:
                        break
            stack.extend(reversed(subdirs))
        return out

    def list(self, cursor: str | None) -> types.ListResourcesResult:
        files = self.files()
        start = int(cursor) if cursor and cursor.isdigit() else 0
        page = files[start:start + PAGE]
        following = str(start + PAGE) if start + PAGE < len(files) else None
        return types.ListResourcesResult(resources=[
            types.Resource(uri=p.as_uri(), name=str(p.relative_to(self.root)),
                           mime_type=_mime(p), size=_size(p))
            for p in page], next_cursor=following)

    # ---- reading -------------------------------------------------------------------------

    def read(self, uri: str) -> types.ReadResourceResult:
        path = self._path_of(uri)
        try:
            data = project_files.read_bytes(path, READ_CAP, confine=self.root,
                                            missing_ok=False) or b""
        except project_files.ProjectFileError as e:
            raise MCPError(RESOURCE_NOT_FOUND, f"not served: {e.reason}") from None
        found = secrets.active()
        mime = _mime(path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            if found.contains_bytes(data):
                raise MCPError(RESOURCE_NOT_FOUND,
                               "not served: the file holds a secret value") from None
            return types.ReadResourceResult(contents=[types.BlobResourceContents(
                uri=uri, blob=base64.b64encode(data).decode("ascii"),
                mime_type=mime or "application/octet-stream")])
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, text=found.redact(text), mime_type=mime or "text/plain")])

    def _path_of(self, uri: str) -> Path:
        """The path a `file://` URI names inside the root; hidden parts and other schemes
        are refused before anything is opened."""
        parts = urlsplit(uri)
        if parts.scheme != "file" or parts.netloc not in ("", "localhost") \
                or parts.query or parts.fragment:
            raise MCPError(INVALID_PARAMS, "only file:// URIs of this project's files are served")
        raw = unquote(parts.path, errors="strict")
        if "\x00" in raw or not raw.startswith("/"):
            raise MCPError(INVALID_PARAMS, "not a file path")
        path = Path(os.path.normpath(raw))
        for base in (self.root, self._given):
            if path == base or base in path.parents:
                rel = path.relative_to(base)
                break
        else:
            raise MCPError(RESOURCE_NOT_FOUND, "not served: not a file of this project")
        if any(part.startswith(".") for part in rel.parts):
            raise MCPError(RESOURCE_NOT_FOUND, "not served: a hidden path")
        return path


def _plain_name(name: str) -> bool:
    return name.isprintable()


def _mime(path: Path) -> str | None:
    return mimetypes.guess_type(path.name)[0]


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None
