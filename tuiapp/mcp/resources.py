"""A server's resources and resource templates, listed in full (for the functions panel and
the palette), read with a size cap, and templates filled in from their variables.

Everything here is the server's text, unescaped: whoever shows it goes through the display
edge. Counts and sizes are capped so a server that lists 100 000 resources or answers a read
with a gigabyte cannot stall kep.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

MAX_PAGES = 10
MAX_ITEMS = 1000  # per list; the rest are counted, not kept
MAX_READ = 256 * 1024  # characters of a resource attached to a message
_VARIABLE = re.compile(r"\{([+#./;?&]?)([A-Za-z0-9_.,%*:]+)\}")


@dataclass(frozen=True)
class ResourceItem:
    server: str
    uri: str
    name: str
    description: str = ""
    mime: str = ""


@dataclass(frozen=True)
class TemplateItem:
    server: str
    uri_template: str
    name: str
    description: str = ""
    mime: str = ""

    @property
    def variables(self) -> tuple[str, ...]:
        """The template's variable names, in order, each once (RFC 6570 expressions)."""
        out: list[str] = []
        for _, names in _VARIABLE.findall(self.uri_template):
            for name in names.split(","):
                name = name.split(":")[0].rstrip("*")
                if name and name not in out:
                    out.append(name)
        return tuple(out)

    def expand(self, values: dict[str, str]) -> str:
        """The URI with every variable filled in; values are percent-encoded, so a value
        cannot add a path segment or a query of its own ("+" and "#" keep reserved
        characters, as RFC 6570 says)."""

        def one(m: re.Match[str]) -> str:
            op, names = m.group(1), m.group(2)
            safe = ":/?#[]@!$&'()*+,;=" if op in "+#" and op else ""
            parts = [quote(str(values.get(n.split(":")[0].rstrip("*"), "")), safe=safe)
                     for n in names.split(",")]
            sep = {"": ",", "+": ",", "#": ",", ".": ".", "/": "/", ";": ";", "?": "&",
                   "&": "&"}[op]
            if op in ("?", "&"):
                keys = [n.split(":")[0].rstrip("*") for n in names.split(",")]
                return op + "&".join(f"{k}={v}" for k, v in zip(keys, parts, strict=True))
            lead = "" if op in ("", "+") else op
            return lead + sep.join(parts)

        return _VARIABLE.sub(one, self.uri_template)


@dataclass(frozen=True)
class Catalog:
    """What one server offers besides tools."""

    resources: tuple[ResourceItem, ...] = ()
    templates: tuple[TemplateItem, ...] = ()
    prompts: tuple[str, ...] = ()
    more: int = 0  # items past MAX_ITEMS, not kept
    subscribe: bool = False  # the server accepts resources/subscribe


@dataclass(frozen=True)
class ResourceText:
    uri: str
    text: str
    mime: str = ""
    truncated: bool = False


async def fetch(client: Any, server: str) -> Catalog:
    """resources/list, resources/templates/list and prompts/list, as far as the server
    says it has them; a failure leaves that list empty and never fails the server."""
    try:
        caps = client.server_capabilities
    except Exception:
        return Catalog()
    res_cap = getattr(caps, "resources", None)
    resources: list[Any] = []
    templates: list[Any] = []
    prompts: list[Any] = []
    more = 0
    if res_cap is not None:
        resources, m1 = await _pages(client.list_resources, "resources")
        templates, m2 = await _pages(client.list_resource_templates, "resource_templates")
        more += m1 + m2
    if getattr(caps, "prompts", None) is not None:
        prompts, m3 = await _pages(client.list_prompts, "prompts")
        more += m3
    return Catalog(
        resources=tuple(ResourceItem(server, str(r.uri), str(r.name or r.uri),
                                     str(r.description or ""), str(r.mime_type or ""))
                        for r in resources),
        templates=tuple(TemplateItem(server, str(t.uri_template), str(t.name),
                                     str(t.description or ""), str(t.mime_type or ""))
                        for t in templates),
        prompts=tuple(str(p.name) for p in prompts), more=more,
        subscribe=bool(getattr(res_cap, "subscribe", False)))


async def _pages(call: Any, field: str) -> tuple[list[Any], int]:
    out: list[Any] = []
    more = 0
    cursor = None
    try:
        for _ in range(MAX_PAGES):
            page = await call(cursor=cursor)
            items = list(getattr(page, field, []) or [])
            room = MAX_ITEMS - len(out)
            out += items[:room]
            more += max(0, len(items) - room)
            cursor = getattr(page, "next_cursor", None)
            if not cursor:
                break
    except Exception:
        pass  # a server that advertises but cannot list: keep what came
    return out, more


async def read(client: Any, uri: str, cap: int = MAX_READ) -> ResourceText:
    """resources/read: its text parts joined (binary parts named with their size), cut at
    `cap` characters."""
    result = await client.read_resource(uri)
    parts: list[str] = []
    mime = ""
    for c in result.contents:
        mime = mime or str(getattr(c, "mime_type", "") or "")
        if getattr(c, "text", None) is not None:
            parts.append(str(c.text))
        elif getattr(c, "blob", None) is not None:
            size = len(base64.b64decode(c.blob, validate=False)) if len(c.blob) < cap else (
                len(c.blob) * 3 // 4)
            parts.append(f"[binary {mime or 'data'}, {size} bytes, not attached]")
    text = "\n".join(parts)
    return ResourceText(uri, text[:cap], mime, truncated=len(text) > cap)
