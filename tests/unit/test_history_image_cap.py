"""Every image a request carries counts under one cap (providers.wire.images_to_send): a tool
result's, an `@` attachment's (typed or a pasted path) and a message's image path alike. Before,
only tool images were counted: 30 `@picture.png` messages sent 30 images, past the APIs' limits."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tuiapp.providers import anthropic, openai_chat, openai_responses
from tuiapp.providers.wire import HISTORY_IMAGE_B64, HISTORY_IMAGES, images_to_send
from tuiapp.vocab.messages import Attachment, Message

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 64).decode("ascii")


def _attached(n: int, data: str = PNG) -> list[Message]:
    out = []
    for i in range(n):
        a = Attachment(f"pic{i}.png", media_type="image/png", data=data, size=len(data))
        out += [Message("user", f"look {i}", attachments=(a,)), Message("assistant", "ok")]
    return out


CONVERTERS: dict[str, Callable[[list[Message]], Any]] = {
    "anthropic": lambda ms: anthropic.to_messages(ms),
    "chat": lambda ms: openai_chat.to_messages(ms, None),
    "responses": lambda ms: openai_responses.to_input(ms),
}


def _image_parts(payload: Any) -> int:
    text = json.dumps(payload)
    return text.count('"type": "image"') + text.count('"type": "image_url"') \
        + text.count('"type": "input_image"')


@pytest.mark.parametrize("api", sorted(CONVERTERS))
def test_attached_images_are_capped_by_count(api: str) -> None:
    history = _attached(HISTORY_IMAGES + 10)
    payload = CONVERTERS[api](history)
    assert _image_parts(payload) == HISTORY_IMAGES
    text = json.dumps(payload)
    # the newest are sent; the oldest are named by a line saying why
    assert "pic0.png not sent" in text and f"pic{HISTORY_IMAGES + 9}.png not sent" not in text


@pytest.mark.parametrize("api", sorted(CONVERTERS))
def test_attached_images_are_capped_by_bytes(api: str) -> None:
    big = "A" * (HISTORY_IMAGE_B64 // 3)
    payload = CONVERTERS[api](_attached(5, big))
    assert _image_parts(payload) == 3


def test_image_paths_and_tool_images_share_the_cap(tmp_path: Path) -> None:
    pic = tmp_path / "p.png"
    pic.write_bytes(base64.b64decode(PNG))
    history = [Message("user", "x", images=(str(pic),))] * 1 + _attached(HISTORY_IMAGES)
    keep = images_to_send(history)
    assert len(keep) == HISTORY_IMAGES
    payload = anthropic.to_messages(history)
    assert _image_parts(payload) == HISTORY_IMAGES
    assert f"{pic} not sent" in json.dumps(payload)
