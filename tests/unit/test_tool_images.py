"""Images in tool results reach the model as images where the provider takes them, otherwise a
short placeholder, never base64 text (issue 15). An MCP server returns an image plus
structuredContent and no text (the filesystem server's `read_media_file`); the real SDKs send
to the loopback LLM server, and the request bodies they sent are checked."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from fakes.llm_server import FakeLLMServer

from tuiapp.conversation.conversation import Conversation, allow_all
from tuiapp.mcp.client import McpFormat, McpManager
from tuiapp.mcp.results import result_parts
from tuiapp.providers.anthropic import AnthropicProvider
from tuiapp.providers.offline import OfflineProvider
from tuiapp.providers.openai_chat import ChatProvider
from tuiapp.providers.openai_responses import ResponsesProvider
from tuiapp.settings.config_types import ApprovalConfig, Config, McpServerConfig, ProviderConfig
from tuiapp.tools.images import MAX_IMAGES
from tuiapp.tools.runner import Runner
from tuiapp.vocab.events import Event, MessageAdded, ToolFinished
from tuiapp.vocab.messages import Message, ToolImage

FAKE = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 2040  # what the fake server's read_media_file returns
PNG_B64 = base64.b64encode(PNG).decode()
# Any run of base64 this long in a text field means image bytes leaked into text.
LONG_BASE64 = re.compile(r"[A-Za-z0-9+/]{200,}")
APIS = {"anthropic": (AnthropicProvider, "ANTHROPIC_API_KEY"),
        "responses": (ResponsesProvider, "OPENAI_API_KEY"),
        "chat": (ChatProvider, "OPENROUTER_API_KEY")}


def img(data: bytes | str, mime: str = "image/png") -> types.ImageContent:
    return types.ImageContent(type="image", mime_type=mime,
                              data=data if isinstance(data, str) else
                              base64.b64encode(data).decode())


def texts(value: Any) -> list[str]:
    """Every string in a request body that is text for the model (not an image's data)."""
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("data", "image_url") and isinstance(v, str):
                continue  # an image's own payload
            out += texts(v)
    elif isinstance(value, list):
        for v in value:
            out += texts(v)
    elif isinstance(value, str):
        out.append(value)
    return out


# ---- the checks, on results as MCP servers send them -------------------------------------


def test_read_media_file_shape_gives_one_image_and_no_base64_text() -> None:
    result = types.CallToolResult(
        content=[img(PNG)],
        structured_content={"content": [{"type": "image", "data": PNG_B64,
                                         "mimeType": "image/png"}], "path": "pic.png"})
    text, images = result_parts(result)
    assert images == (ToolImage("image/png", PNG_B64, 2048),)
    assert "[image: image/png, 2.0 KiB]" in text and '"path": "pic.png"' in text
    assert not LONG_BASE64.search(text)


def test_the_bytes_decide_the_type_not_the_declared_mime() -> None:
    jpeg = b"\xff\xd8\xff\xe0" + b"\1" * 1020
    text, images = result_parts(types.CallToolResult(content=[
        img(jpeg, "image/png"),  # lies: jpeg bytes
        img(b"OPENAI_API_KEY=sk-not-an-image\n" * 40),  # a text file called png
        img(b"GIF89a" + b"\0" * 100, "text/plain"),  # a gif called text
        img(b"RIFF\0\0\0\0WEBPVP8 " + b"\0" * 50, "image/webp"),
        img(b"<svg xmlns='http://www.w3.org/2000/svg'/>", "image/svg+xml")]))
    assert [i.media_type for i in images] == ["image/jpeg", "image/gif", "image/webp"]
    lines = text.splitlines()
    assert lines[0] == "[image: image/jpeg, 1.0 KiB]"
    assert lines[1] == ("[image: image/png, 1.2 KiB — not sent: its bytes are not a png, jpeg, "
                        "gif or webp image]")
    assert lines[4].startswith("[image: image/svg+xml, ") and "not sent" in lines[4]
    hostile_mime = types.CallToolResult(content=[img(b"nope" * 10, "\x1b]2;pwned\x07/png"),
                                                 img(PNG, "image/" + "x" * 5000)])
    text, images = result_parts(hostile_mime)
    assert text.splitlines()[0].startswith("[image: ?, 40 B — not sent")  # no escape shown
    assert text.splitlines()[1] == "[image: image/png, 2.0 KiB]" and len(images) == 1
    assert "sk-not" not in text and not LONG_BASE64.search(text)


def test_a_20_mb_image_is_refused_without_being_decoded() -> None:
    huge = base64.b64encode(PNG + b"\0" * (20 * 1024 * 1024)).decode()
    text, images = result_parts(types.CallToolResult(content=[img(huge)]))
    assert images == ()
    assert text == ("[image: image/png, 20.0 MiB — not sent: larger than the 3.8 MiB kep "
                    "sends per image]")


def test_500_images_send_the_first_few_and_say_how_many_were_left_out() -> None:
    content: list[Any] = [types.TextContent(type="text", text="500 frames")] + [img(PNG)] * 500
    text, images = result_parts(types.CallToolResult(content=content))
    assert len(images) == MAX_IMAGES
    assert text.splitlines()[0] == "500 frames"
    assert text.splitlines()[-1] == (f"[{500 - MAX_IMAGES} more images not sent: kep sends at "
                                     f"most {MAX_IMAGES} images per tool result]")
    assert len(text) < 1000


def test_invalid_base64_and_missing_data_are_placeholders() -> None:
    bad = types.CallToolResult(content=[img("iVBORw0KGgo!!!not*base64" * 30),
                                        img(PNG_B64[:-3]), img(PNG_B64[:2000] + "\x1b[2J")])
    text, images = result_parts(bad)
    assert images == ()
    assert text.count("not sent: its data is not valid base64") == 3
    assert "\x1b" not in text


def test_line_wrapped_base64_is_still_an_image() -> None:
    wrapped = "\n".join(PNG_B64[i:i + 76] for i in range(0, len(PNG_B64), 76))
    _, images = result_parts(types.CallToolResult(content=[img(wrapped)]))
    assert images == (ToolImage("image/png", PNG_B64, 2048),)


def test_a_stored_tool_image_survives_to_dict_and_a_bad_record_is_dropped() -> None:
    image = ToolImage("image/png", PNG_B64, 2048)
    m = Message("tool", image.placeholder(), tool_call_id="c1", name="t", tool_images=(image,))
    assert Message.from_dict(json.loads(json.dumps(m.to_dict()))) == m
    export = m.to_dict(image_data=False)
    assert export["tool_images"] == [{"media_type": "image/png", "size": 2048}]
    assert PNG_B64 not in json.dumps(export)
    hostile = dict(m.to_dict(), tool_images=[{"media_type": "text/html", "data": "x", "size": 1},
                                             {"media_type": "image/png"}, "nonsense"])
    assert Message.from_dict(hostile).tool_images == ()


# ---- through a real MCP server, the runner, the conversation and the real SDKs ----------


@pytest.fixture
async def mcp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[McpManager]:
    monkeypatch.setenv("FAKE_SECRET_VALUE", "kep-test-secret-0123456789")
    server = McpServerConfig("fs", sys.executable, (FAKE,),
                             env={"FAKE_SECRET_VALUE": "kep-test-secret-0123456789"})
    config = Config(project_root=tmp_path, mcp_servers={"fs": server})
    manager = McpManager(config, on_tools=lambda k, i: None, on_state=lambda s: None)
    manager.start()
    await manager.wait_settled(30)
    yield manager
    await manager.stop()


async def converse(manager: McpManager, provider: Any, args: dict[str, Any] | None = None,
                   tool: str = "fs_read_media_file") -> list[Event]:
    events: list[Event] = []
    runner = Runner(manager.config, spool_dir=manager.config.project_root / "spool",
                    formats=[McpFormat(manager)])
    specs = {s.name: s for s in manager.tools()}
    conv = Conversation(provider, lambda: specs, lambda: ApprovalConfig("allow"), allow_all,
                        runner.execute, events.append)
    await conv.turn(f"{tool} {json.dumps(args or {'path': 'pic.png'})}")
    return events


def script(tool: str = "read_media_file", args: dict[str, Any] | None = None
           ) -> list[dict[str, Any]]:
    return [{"tool_calls": [{"name": f"fs_{tool}", "arguments": args or {"path": "pic.png"},
                             "id": "call_1"}]}, {"text": "It is a picture."}]


async def sent_result(api: str, manager: McpManager, monkeypatch: pytest.MonkeyPatch,
                      tool: str = "read_media_file", args: dict[str, Any] | None = None
                      ) -> tuple[Any, list[Event]]:
    """The tool result item of the second request the real SDK sent."""
    cls, env = APIS[api]
    monkeypatch.setenv(env, "sk-test-key")
    with FakeLLMServer(script(tool, args)) as server:
        url = server.url if api == "anthropic" else server.base_url
        provider = cls(ProviderConfig("p", api, url, env), "test-model")
        try:
            events = await converse(manager, provider, args, f"fs_{tool}")
        finally:
            await provider.aclose()
        assert len(server.requests) == 2, [r.body for r in server.requests]
        body = server.requests[1].body
    assert not any(LONG_BASE64.search(t) for t in texts(body)), "base64 in a text field"
    if api == "anthropic":
        item = body["messages"][-1]["content"][0]
        assert item["type"] == "tool_result"
    elif api == "responses":
        item = next(i for i in body["input"] if i.get("type") == "function_call_output")
    else:
        item = next(m for m in body["messages"] if m["role"] == "tool")
    return item, events


@pytest.mark.slow
async def test_anthropic_gets_a_tool_result_with_an_image_block(
        mcp: McpManager, monkeypatch: pytest.MonkeyPatch) -> None:
    item, events = await sent_result("anthropic", mcp, monkeypatch)
    text, image = item["content"]
    assert text["type"] == "text" and "[image: image/png, 2.0 KiB]" in text["text"]
    assert image == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                 "data": PNG_B64}}
    fin = next(e for e in events if isinstance(e, ToolFinished))
    assert PNG_B64 not in json.dumps(fin.to_json())  # `kep run --json` shows no bytes
    added = [e for e in events if isinstance(e, MessageAdded) and e.message.role == "tool"]
    assert PNG_B64 not in json.dumps(added[0].to_json())


@pytest.mark.slow
async def test_responses_gets_input_text_then_input_image(
        mcp: McpManager, monkeypatch: pytest.MonkeyPatch) -> None:
    item, _ = await sent_result("responses", mcp, monkeypatch)
    assert item["call_id"] == "call_1"
    text, image = item["output"]
    assert text["type"] == "input_text" and "[image: image/png, 2.0 KiB]" in text["text"]
    assert image == {"type": "input_image", "detail": "auto",
                     "image_url": f"data:image/png;base64,{PNG_B64}"}


@pytest.mark.slow
async def test_chat_gets_the_placeholder_saying_why(
        mcp: McpManager, monkeypatch: pytest.MonkeyPatch) -> None:
    item, _ = await sent_result("chat", mcp, monkeypatch)
    assert isinstance(item["content"], str)
    assert ("[image: image/png, 2.0 KiB — not sent: this provider takes no images in tool "
            "results]") in item["content"]
    assert '"path": "pic.png"' in item["content"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["lying", "huge", "many", "bad_base64"])
async def test_hostile_images_never_put_base64_in_any_request(
        kind: str, mcp: McpManager, monkeypatch: pytest.MonkeyPatch) -> None:
    item, _ = await sent_result("anthropic", mcp, monkeypatch, "hostile_media", {"kind": kind})
    blocks = item["content"] if isinstance(item["content"], list) else []
    sent = [b["source"]["media_type"] for b in blocks if b["type"] == "image"]
    assert sent == {"lying": ["image/jpeg", "image/gif"], "huge": [],
                    "many": ["image/png"] * MAX_IMAGES, "bad_base64": []}[kind]


@pytest.mark.slow
async def test_an_image_holding_a_secret_is_not_sent(
        mcp: McpManager, monkeypatch: pytest.MonkeyPatch) -> None:
    # (the server is handed FAKE_SECRET_VALUE on purpose: a secret-named value kep redacts)
    item, _ = await sent_result("responses", mcp, monkeypatch, "hostile_media",
                                {"kind": "secret"})
    assert isinstance(item["output"], str)
    assert "not sent: it contains a secret value" in item["output"]


@pytest.mark.slow
async def test_offline_model_says_it_received_an_image(mcp: McpManager) -> None:
    events = await converse(mcp, OfflineProvider(ProviderConfig("offline", "offline"),
                                                 "offline"))
    reply = [e.message for e in events if isinstance(e, MessageAdded)][-1]
    assert "It returned 1 image (image/png)" in reply.content
    assert not LONG_BASE64.search(reply.content)


# ---- the session store, resume, `kep sessions show` and exports -------------------------


async def test_images_survive_a_resume_stored_once_and_exports_show_placeholders(
        project: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from test_store import ECHO, Scripted

    from tuiapp import cli
    from tuiapp.conversation.recorder import SessionRecorder
    from tuiapp.conversation.store import Store
    from tuiapp.providers.base import StreamEnd
    from tuiapp.vocab.messages import ToolCall

    image = ToolImage("image/png", PNG_B64, 2048)

    async def executor(spec: Any, call: ToolCall, emit: Any) -> ToolFinished:
        fin = ToolFinished(call.id, call.name, "ok", 0, 5, f"a frame\n{image.placeholder()}",
                           images=(image,))
        emit(fin)
        return fin

    provider = Scripted([ToolCall.from_raw("c1", "echo", '{"text": "x"}'), StreamEnd("tool_use")],
                        [StreamEnd("end_turn")])
    with Store.open() as store:
        sid = store.create_session(project, "fake/m")
        conv = Conversation(provider, lambda: {"echo": ECHO},
                            lambda: ApprovalConfig("allow"), allow_all, executor,
                            SessionRecorder(store, sid))
        await conv.turn("show me")
        assert store.load_messages(sid) == conv.history
        [tool] = [m for m in store.load_messages(sid) if m.role == "tool"]
        assert tool.tool_images == (image,)  # a resumed session sends the image again
        rows = [*store._db.execute("SELECT data FROM messages"),
                *store._db.execute("SELECT result FROM tool_calls")]
        assert "".join(str(r[0]) for r in rows).count(PNG_B64) == 1  # once, never as text
    monkeypatch.chdir(project)
    for argv in (["show", sid], ["export", sid, "--format", "md"],
                 ["export", sid, "--format", "json"]):
        assert cli.main(["sessions", *argv]) == 0
        out = capsys.readouterr().out
        assert "[image: image/png, 2.0 KiB]" in out, argv
        assert not LONG_BASE64.search(out), argv


@pytest.mark.slow
async def test_kep_mcp_serve_passes_a_served_servers_image_on_as_an_image(
        project: Path) -> None:
    from conftest import KEP, kep_env
    from mcp import Client, StdioServerParameters

    (project / "mcp.json").write_text(json.dumps({"mcpServers": {"fs": {
        "command": sys.executable, "args": [FAKE]}}}))
    (project / "kep.toml").write_text('[tools]\nbuiltins = false\n\n[[approval.rules]]\n'
                                      'tool = "fs_.*"\naction = "allow"\n')
    params = StdioServerParameters(command=KEP[0], env=kep_env(), args=[
        *KEP[1:], "mcp", "serve", "--project", str(project)])
    async with Client(params, cache=None) as client:
        for _ in range(100):  # the served server's tools join once it is up
            if any(t.name == "fs_read_media_file" for t in (await client.list_tools()).tools):
                break
            await asyncio.sleep(0.1)
        result = await client.call_tool("fs_read_media_file", {"path": "pic.png"})
    assert not result.is_error, result
    [text] = [c.text for c in result.content if isinstance(c, types.TextContent)]
    [image] = [c for c in result.content if isinstance(c, types.ImageContent)]
    assert (image.mime_type, image.data) == ("image/png", PNG_B64)
    assert "[image: image/png, 2.0 KiB]" in text and not LONG_BASE64.search(text)


def test_a_long_session_resends_only_its_newest_images() -> None:
    from tuiapp.providers import anthropic, openai_responses
    from tuiapp.providers.wire import HISTORY_IMAGES
    from tuiapp.vocab.messages import ToolCall

    history: list[Message] = [Message("user", "go")]
    for n in range(30):
        image = ToolImage("image/png", PNG_B64, 2048)
        history += [Message("assistant", "", tool_calls=(ToolCall(f"c{n}", "shot", {}),)),
                    Message("tool", f"frame {n}\n{image.placeholder()}", tool_call_id=f"c{n}",
                            name="shot", tool_images=(image,))]
    blocks = [b for m in anthropic.to_messages(history) for b in m["content"]
              if b["type"] == "tool_result"]
    sent = [isinstance(b["content"], list) for b in blocks]
    assert sent == [False] * (30 - HISTORY_IMAGES) + [True] * HISTORY_IMAGES
    assert blocks[0]["content"] == ("frame 0\n[image: image/png, 2.0 KiB — not sent: only the "
                                    "conversation's newest images are sent again]")
    outputs = [i["output"] for i in openai_responses.to_input(history)
               if i.get("type") == "function_call_output"]
    assert [isinstance(o, list) for o in outputs] == sent


@pytest.mark.parametrize("size", [67, 120, 300, 380])
def test_a_tiny_images_base64_leaves_structured_content_too(size: int) -> None:
    """Under 512 base64 characters (images under about 380 bytes) the bytes were kept."""
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2
    data = base64.b64encode(png[:size]).decode()
    result = types.CallToolResult(content=[], structured_content={
        "path": "icon.png", "content": data, "caption": "QUJDREVGR0hJSktMTU5PUA"})
    text, _ = result_parts(result)
    assert data not in text and "[base64 data, " in text
    assert "QUJDREVGR0hJSktMTU5PUA" in text  # ordinary short strings stay as they are
