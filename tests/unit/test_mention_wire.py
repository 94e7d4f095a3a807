"""What `@` mentions attach reaches each API in its own shape (issue 28, items 2 and 3): the
real SDKs (openai 3.x, anthropic 2.x) send to the loopback fake server and the request bodies
they sent are checked. A session stores the attachments, so a resumed one resends the same
blocks even after the file changed or went away."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer

from tuiapp.conversation.mentions import attach
from tuiapp.conversation.store import Store
from tuiapp.providers.anthropic import AnthropicProvider
from tuiapp.providers.base import Provider
from tuiapp.providers.openai_chat import ChatProvider
from tuiapp.providers.openai_responses import ResponsesProvider
from tuiapp.security import secrets
from tuiapp.settings.config_types import ProviderConfig
from tuiapp.vocab.events import MessageAdded
from tuiapp.vocab.messages import Message

PNG = b"\x89PNG\r\n\x1a\n" + b"\1" * 200
PNG_B64 = base64.b64encode(PNG).decode()
JPEG = b"\xff\xd8\xff\xe0" + b"\2" * 200
APIS = {"anthropic": (AnthropicProvider, "ANTHROPIC_API_KEY"),
        "responses": (ResponsesProvider, "OPENAI_API_KEY"),
        "chat": (ChatProvider, "OPENROUTER_API_KEY")}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


@pytest.fixture(params=list(APIS))
def api(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
               ) -> AsyncIterator[Callable[[str], Provider]]:
    made: list[Provider] = []

    def factory(api: str) -> Provider:
        cls, env = APIS[api]
        monkeypatch.setenv(env, "sk-test-key-not-real-000")
        url = server.url if api == "anthropic" else server.base_url
        provider = cls(ProviderConfig(f"p{api}", api, url, env), "test-model")
        made.append(provider)
        return provider

    yield factory
    for p in made:
        await p.aclose()


async def send(provider: Provider, history: list[Message]) -> None:
    async for _ in provider.stream(history, (), None):
        pass


def user_content(api: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    return (body["input"] if api == "responses" else body["messages"])[0]["content"]


def expected(api: str, media: str, data: str) -> dict[str, Any]:
    if api == "responses":
        return {"type": "input_image", "detail": "auto", "image_url": f"data:{media};base64,{data}"}
    if api == "chat":
        return {"type": "image_url", "image_url": {"url": f"data:{media};base64,{data}"}}
    return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}


def text_parts(parts: list[dict[str, Any]]) -> list[str]:
    return [p["text"] for p in parts if p.get("type") in ("text", "input_text")]


async def test_files_and_images_are_sent_as_each_api_expects(
        api: str, make: Callable[[str], Provider], server: FakeLLMServer, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("remember the milk\n")
    (tmp_path / "pic.png").write_bytes(PNG)
    (tmp_path / "photo.png").write_bytes(JPEG)  # JPEG bytes under a .png name
    got = await attach("compare @notes.md @pic.png @photo.png", tmp_path)
    assert got.notes == []
    server.add({"text": "ok"})
    await send(make(api), [Message("user", "compare @notes.md @pic.png @photo.png",
                                   attachments=tuple(got.attachments))])
    parts = user_content(api, server.requests[0].body)
    assert expected(api, "image/png", PNG_B64) in parts
    assert expected(api, "image/jpeg", base64.b64encode(JPEG).decode()) in parts
    texts = text_parts(parts)
    assert '<attachment name="notes.md">\nremember the milk\n\n</attachment>' in texts
    assert "compare @notes.md @pic.png @photo.png" in texts
    assert len(parts) == 4  # the file, two images, the message: nothing else, nothing twice


async def test_a_key_in_a_stored_attachment_is_filtered_on_the_way_out(
        api: str, make: Callable[[str], Provider], server: FakeLLMServer) -> None:
    from tuiapp.vocab.messages import Attachment

    key = "sk-late-Secret-abcdefghijklmnop0123"
    old = Message("user", "see", attachments=(Attachment("old.txt", text=f"k={key}"),))
    secrets.note_dotenv({"LATE_TOKEN": key})  # a key added after the session was recorded
    server.add({"text": "ok"})
    await send(make(api), [old])
    assert key not in json.dumps(server.requests[0].body)


async def test_a_resumed_session_resends_what_was_attached(
        api: str, make: Callable[[str], Provider], server: FakeLLMServer, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("first version\n")
    (tmp_path / "pic.png").write_bytes(PNG)
    got = await attach("@notes.md @pic.png", tmp_path)
    message = Message("user", "@notes.md @pic.png", attachments=tuple(got.attachments))
    with Store.open(tmp_path / "store.db") as store:
        sid = store.create_session(tmp_path, "test-model")
        store.record(sid, MessageAdded(message))
        (tmp_path / "notes.md").write_text("changed since\n")
        (tmp_path / "pic.png").unlink()
        resumed = store.load_messages(sid)
    assert resumed == [message]
    server.add({"text": "ok"})
    server.add({"text": "ok"})
    await send(make(api), [message])
    await send(make(api), resumed)
    first, again = (user_content(api, r.body) for r in server.requests)
    assert first == again and "first version" in json.dumps(again)


def test_the_chat_shapes_match_the_sdk_types() -> None:
    """The part shapes are the SDKs' own (their TypedDicts name every required key)."""
    from anthropic.types import Base64ImageSourceParam
    from openai.types.chat import ChatCompletionContentPartImageParam
    from openai.types.responses import ResponseInputImageParam

    assert {"type", "detail", "image_url"} <= set(ResponseInputImageParam.__annotations__)
    assert {"type", "image_url"} <= set(ChatCompletionContentPartImageParam.__annotations__)
    assert {"type", "media_type", "data"} <= set(Base64ImageSourceParam.__annotations__)


def test_nothing_attached_sends_plain_text(tmp_path: Path) -> None:
    got = asyncio.run(attach("no mentions here, mail me@example.com", tmp_path))
    assert got.attachments == [] and got.notes == []
