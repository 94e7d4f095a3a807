from __future__ import annotations

from tuiapp.providers.base import StreamEnd
from tuiapp.providers.offline import OfflineProvider, parse_call, parse_calls
from tuiapp.settings.config_types import BUILTIN_PROVIDERS
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

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


# ---- several calls in one reply (parallel calls, as real models make them) -----------------


async def test_semicolons_make_several_calls_in_one_reply() -> None:
    items = await collect([Message("user", "readfile a.txt; readfile b.txt")])
    calls = [i for i in items if isinstance(i, ToolCall)]
    assert [c.arguments for c in calls] == [{"filename": "a.txt"}, {"filename": "b.txt"}]
    assert len({c.id for c in calls}) == 2  # each its own call
    assert items[-1] == StreamEnd("tool_use")
    assert not [i for i in items if isinstance(i, TextDelta)]  # nothing was skipped


async def test_one_call_per_line_and_mixed_separators() -> None:
    items = await collect([Message("user", "readfile a.txt\r\nshout hi there;readfile c\n\n")])
    calls = [i for i in items if isinstance(i, ToolCall)]
    assert [(c.name, c.arguments) for c in calls] == [
        ("readfile", {"filename": "a.txt"}), ("shout", {"text": "hi there"}),
        ("readfile", {"filename": "c"})]


def test_separators_inside_quotes_and_json_stay_arguments() -> None:
    calls, skipped = parse_calls(
        'shout "a; b"; readfile {"filename": "x;y\\nz"}\n'
        '/call readfile {\n  "filename": "multi;line"\n}', TOOLS)
    assert skipped == []
    assert [c.arguments for c in calls] == [
        {"text": "a; b"}, {"filename": "x;y\nz"}, {"filename": "multi;line"}]


def test_hostile_pieces() -> None:
    # A tab instead of a space still names the tool.
    (c,), _ = parse_calls("readfile\ta.txt", TOOLS)
    assert c.arguments == {"filename": "a.txt"}
    # An apostrophe (an unclosed quote) does not swallow the next call.
    calls, _ = parse_calls("shout don't; shout b", TOOLS)
    assert [c.arguments["text"] for c in calls] == ["don't", "b"]
    # A broken JSON argument is one call with an error, not a spray of fragments.
    calls, skipped = parse_calls('readfile {"filename": ; readfile b', TOOLS)
    assert len(calls) == 1 and calls[0].arguments_error and skipped == []
    # Prose is not a call, even with semicolons; nothing at all means help text.
    assert parse_calls("hello; how are you\nfine", TOOLS) == ([], [])
    assert parse_calls(";;;\n\n ; ", TOOLS) == ([], [])
    # 500 calls, and a 2 MB argument, come through whole.
    calls, _ = parse_calls("; ".join(f"shout n{i}" for i in range(500)), TOOLS)
    assert [c.arguments["text"] for c in calls] == [f"n{i}" for i in range(500)]
    big = "x" * 2_000_000
    (c,), _ = parse_calls(f"shout {big}", TOOLS)
    assert c.arguments["text"] == big
    # A control sequence stays data: it is the argument, not a separator.
    (c,), _ = parse_calls("shout \x1b[2Jboom", TOOLS)
    assert c.arguments["text"] == "\x1b[2Jboom"


async def test_pieces_that_are_not_calls_are_named_and_the_calls_still_made() -> None:
    items = await collect([Message("user", "readfile a.txt; please be quick")])
    calls = [i for i in items if isinstance(i, ToolCall)]
    text = "".join(i.text for i in items if isinstance(i, TextDelta))
    assert len(calls) == 1 and "`please be quick`" in text and "skipped" in text


async def test_the_summary_covers_every_result() -> None:
    items = await collect([Message("user", "readfile a.txt; readfile b.txt; shout x")])
    a, b, s = [i for i in items if isinstance(i, ToolCall)]
    history = [
        Message("user", "readfile a.txt; readfile b.txt; shout x"),
        Message("assistant", "", tool_calls=(a, b, s)),
        Message("tool", "alpha\n", tool_call_id=a.id, name="readfile"),
        Message("tool", "beta\n", tool_call_id=b.id, name="readfile"),
        Message("tool", "the user denied this call", tool_call_id=s.id, name="shout",
                is_error=True),
    ]
    text = "".join(i.text for i in await collect(history) if isinstance(i, TextDelta))
    assert "3 calls: 2 finished ok, 1 not." in text
    assert text.index("alpha") < text.index("beta") < text.index("**shout** was not run")


def test_the_summary_of_a_capped_output_gives_the_whole_size() -> None:
    """19.8 MB printed, 64 KiB sent to the model: the summary says 19,800,000 bytes, not the
    size of what was kept."""
    from tuiapp.providers.offline import summarise_results
    from tuiapp.tools.call_output import cap_text
    from tuiapp.vocab.messages import Message

    body = cap_text("line of output\n" * 1_320_000, 64 * 1024, "")
    text = summarise_results([Message("tool", body, tool_call_id="c1", name="flood")])
    assert "19,800,000 bytes" in text and f"{len(body.encode()):,} bytes" not in text
