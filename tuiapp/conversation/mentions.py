"""`@` mentions in a user message: what they attach, read and checked once, when it is sent.

`@path` (or `@"a path with spaces"`, with `\\"`, `\\\\`, `\\t` and `\\n` escapes) names a
project file; `@server:uri` an MCP resource of a connected server. A file is read through the
one project-file reader with confinement (outside the project, a hidden file such as `.env`, a
hard link to `.env`, a FIFO or a device are refused, each with one line saying why), within the
caps below. Its bytes decide what it is: a png, jpeg, gif or webp is an image (whatever its
name says), a name that claims an image for bytes that are not one is refused, anything else
must be UTF-8 text. Text goes through the secrets filter before it is kept.

What a message attached is kept with it (vocab.messages.Attachment), so a resumed session
resends the same content. A mention that names nothing (`@alice`) stays text, with a line.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tuiapp.security import project_files, secrets
from tuiapp.tools.images import MAX_IMAGE_B64, sniff
from tuiapp.vocab.messages import Attachment, human_size

TEXT_CAP = 256 * 1024  # one file's text: a bigger one is refused, not cut
TOTAL_CAP = 1024 * 1024  # all text one message attaches
IMAGE_CAP = MAX_IMAGE_B64 * 3 // 4  # its base64 must fit Anthropic's 5 MB
MAX_ATTACHMENTS = 20

# `@` at the start or after white space; a quoted form for names with spaces or tabs.
MENTION = re.compile(r'(?:(?<=\s)|^)@(?:"((?:[^"\\\n]|\\.)*)"|([^\s"]+))')
_ESCAPES = {"t": "\t", "n": "\n", '"': '"', "\\": "\\"}
_TRAILING = ".,;:!?)]}'"

# (server, uri) -> an Attachment or a line saying why not (mcp.resource_read).
ResourceReader = Callable[[str, str], Awaitable[Attachment | str]]


@dataclass
class Attached:
    """What a message's mentions gave: the attachments, and one line per mention refused."""

    attachments: list[Attachment] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def unquote(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def quote(name: str) -> str:
    """A mention of `name` that `mentions()` reads back as `name`."""
    if name and not re.search(r'[\s"\\]', name):
        return "@" + name
    body = name.replace("\\", "\\\\").replace('"', '\\"')
    return '@"' + body.replace("\t", "\\t").replace("\n", "\\n") + '"'


def mentions(text: str) -> list[str]:
    """The names mentioned, in order, each once."""
    out: dict[str, None] = {}
    for m in MENTION.finditer(text):
        out[unquote(m.group(1)) if m.group(1) is not None else m.group(2)] = None
    return list(out)


def shown(name: str) -> str:
    """A name for a one-line message: control characters escaped (the display edge shows
    them, but a line of ours must stay one line)."""
    return name.encode("unicode_escape").decode("ascii") if not name.isprintable() else name


def _path(name: str, root: Path) -> Path:
    path = Path(name).expanduser()
    return path if path.is_absolute() else root / path


def read_file(name: str, root: Path) -> Attachment | str:
    """A project file as an Attachment, or one line saying why it is not attached."""
    path = _path(name, root)
    try:
        raw = project_files.read_bytes(path, max(TEXT_CAP, IMAGE_CAP), confine=root,
                                       missing_ok=False)
    except project_files.ProjectFileError as e:
        return f"@{shown(name)}: {e.reason}"
    assert raw is not None
    media = sniff(raw)
    claimed = mimetypes.guess_type(path.name)[0] or ""
    if media is None and claimed.startswith("image/"):
        return (f"@{shown(name)}: its name says {claimed} but its bytes are not a png, jpeg, "
                "gif or webp image; not attached")
    if media is not None:
        if len(raw) > IMAGE_CAP:
            return (f"@{shown(name)}: image too big ({human_size(len(raw))}; at most "
                    f"{human_size(IMAGE_CAP)}); not attached")
        return Attachment(name, media_type=media, data=base64.b64encode(raw).decode("ascii"),
                          size=len(raw))
    if len(raw) > TEXT_CAP:
        return (f"@{shown(name)}: too big to attach ({human_size(len(raw))}; text is attached "
                f"up to {human_size(TEXT_CAP)})")
    try:
        text = project_files.decode(raw, name)
    except project_files.ProjectFileError as e:
        return f"@{shown(name)}: {e.reason}; only text and images are attached"
    return Attachment(name, text=secrets.active().redact(text), size=len(raw))


def _file_name(name: str, root: Path) -> str | None:
    """The name as a file that exists, or with trailing punctuation dropped (`@a.py,`)."""
    for candidate in (name, name.rstrip(_TRAILING)):
        path = _path(candidate, root) if candidate else None
        if path is not None and (path.exists() or path.is_symlink()):
            return candidate
    return None


async def attach(text: str, root: Path, servers: Iterable[str] = (),
                 read_resource: ResourceReader | None = None) -> Attached:
    """What the mentions in `text` attach, within the caps; a line for each one refused."""
    out = Attached()
    servers = set(servers)
    total = 0
    for name in mentions(text):
        if len(out.attachments) >= MAX_ATTACHMENTS:
            out.notes.append(f"@{shown(name)}: not attached; at most {MAX_ATTACHMENTS} "
                             "attachments a message")
            continue
        server, _, uri = name.partition(":")
        if uri and server in servers and read_resource is not None:
            got: Attachment | str = await read_resource(server, uri)
        elif (found := _file_name(name, root)) is not None:
            got = read_file(found, root)
        else:
            out.notes.append(f"@{shown(name)}: no such file in the project or MCP server; "
                             "sent as text")
            continue
        if isinstance(got, str):
            out.notes.append(got)
            continue
        if not got.is_image:
            if total + len(got.text) > TOTAL_CAP:
                out.notes.append(f"@{shown(name)}: not attached; a message attaches at most "
                                 f"{human_size(TOTAL_CAP)} of text")
                continue
            total += len(got.text)
        out.attachments.append(got)
    return out


async def attach_for(text: str, root: Path, mcp: object | None = None, *,
                     takes_images: bool = True, model: str = "") -> Attached:
    """`attach` with the project's MCP servers (an McpManager or None); images are dropped
    with a line when the model takes none (the offline model)."""
    if "@" not in text:
        return Attached()
    from tuiapp.mcp import resource_read

    states = getattr(mcp, "states", None)
    servers = list(states()) if callable(states) else []

    async def read(server: str, uri: str) -> Attachment | str:
        return await resource_read.read_resource(mcp, server, uri)

    got = await attach(text, root, servers, read)
    if not takes_images:
        for a in [a for a in got.attachments if a.is_image]:
            got.attachments.remove(a)
            got.notes.append(f"@{shown(a.name)}: {model or 'this model'} takes no images; "
                             "not sent")
    return got


def pasted_mention(text: str, root: Path) -> str | None:
    """The mention for a pasted path (as terminals paste a dropped file: maybe quoted, with
    `\\ ` for spaces, or a file:// URL) of a file that exists, relative to `root` when inside
    it; None for anything else (pasted as it is). Whether it may be read is decided at send."""
    s = text.strip()
    if not s or "\n" in s or len(s) > 4096:
        return None
    if len(s) > 1 and s[0] == s[-1] and s[0] in "'\"":
        s = s[1:-1]
    elif s.startswith("file://"):
        from urllib.parse import unquote as url_unquote

        s = url_unquote(s[len("file://"):])
    else:
        s = re.sub(r"\\(.)", r"\1", s)
    path = Path(s).expanduser()
    if not path.is_absolute() or not path.is_file():
        return None
    real, top = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    name = str(real.relative_to(top)) if top in real.parents else str(path)
    return quote(name) + " "
