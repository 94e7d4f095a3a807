from __future__ import annotations

from tuiapp.config import BUILTIN_PROVIDERS
from tuiapp.core.events import TextDelta
from tuiapp.core.messages import Message, ToolCall
from tuiapp.providers.base import StreamEnd
from tuiapp.providers.offline import OfflineProvider, parse_call
from tuiapp.tools.model import ToolSpec

READ = ToolSpec(
    "readfile",
    "Read a file.\nMore.",
    {
        "type": "object",
        "properties": {
            "filename": {"type": "string"},
            "offset": {"type": "integer"},
            "length": {"type": "integer"},
        },
        "required": ["filename"],
    },
    "keprompt",
    "x",
)
SHOUT = ToolSpec(
    "shout",
    "Upper-case text",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "keprompt",
    "y",
)
TOOLS = {"readfile": READ, "shout": SHOUT}


def test_parse_call_forms() -> None:
    c = parse_call("readfile README.md", TOOLS)
    assert c is not None and c.arguments == {"filename": "README.md"}
    c = parse_call('readfile {"filename": "a b.txt", "offset": 3}', TOOLS)
    assert c is not None and c.arguments == {"filename": "a b.txt", "offset": 3}
    c = parse_call("/call readfile notes.txt 10 length=5", TOOLS)
    assert c is not None and c.arguments == {"filename": "notes.txt", "offset": 10, "length": 5}
    c = parse_call("shout hello there world", TOOLS)
    assert c is not None and c.arguments == {"text": "hello there world"}
    c = parse_call('readfile {"filename": ', TOOLS)
    assert c is not None and c.arguments_error
    assert parse_call("what does readfile do?", TOOLS) is None
    assert parse_call("hello", TOOLS) is None


async def collect(messages: list[Message]) -> list[object]:
    p = OfflineProvider(BUILTIN_PROVIDERS["offline"], "")
    return [i async for i in p.stream(messages, list(TOOLS.values()), None)]


async def test_offline_calls_then_summarises() -> None:
    items = await collect([Message("user", "readfile README.md")])
    assert isinstance(items[0], ToolCall) and items[0].name == "readfile"
    assert items[-1] == StreamEnd("tool_use")
    call = items[0]
    history = [
        Message("user", "readfile README.md"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "# kep\nline two\n", tool_call_id=call.id, name="readfile"),
    ]
    text = "".join(i.text for i in await collect(history) if isinstance(i, TextDelta))
    assert "readfile" in text and "exit 0" in text and "# kep" in text and "2 lines" in text


async def test_offline_help_lists_tools_and_providers() -> None:
    text = "".join(
        i.text for i in await collect([Message("user", "hi")]) if isinstance(i, TextDelta)
    )
    assert "`readfile`" in text and "`shout`" in text and "OPENAI_API_KEY" in text
