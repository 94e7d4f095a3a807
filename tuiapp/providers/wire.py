"""What the three network providers share: keys, SDK error → ProviderFailure, history clean-up,
image and schema helpers. Nothing here imports an SDK at module level (startup time)."""

from __future__ import annotations

import base64
import json
import mimetypes
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tuiapp.providers.base import Provider, ProviderFailure, mask_secret
from tuiapp.settings.config_types import ProviderConfig
from tuiapp.vocab.messages import Attachment, Message, ToolImage

# Local servers (ollama, llama.cpp, vLLM…) ignore the key, but the SDKs insist on one.
PLACEHOLDER_KEY = "kep-no-key"
CONNECT_TIMEOUT = 10.0
# Between two streamed chunks: long, since a reasoning model may think silently for minutes.
READ_TIMEOUT = 300.0
# In-stream error types (200 response, error event) worth a retry if nothing was shown yet.
RETRYABLE_KINDS = {"overloaded_error", "api_error", "rate_limit_error", "server_error"}
IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
# Images one request carries, of every kind: tool results', `@` attachments' and image paths
# (Anthropic takes at most 32 MB a request, 100 images).
HISTORY_IMAGES = 20
HISTORY_IMAGE_B64 = 20 * 1024 * 1024
HISTORY_NOTE = "only the conversation's newest images are sent again"


def api_key_for(config: ProviderConfig) -> str:
    if not config.api_key_env:
        return PLACEHOLDER_KEY
    key = config.api_key()
    if not key:
        raise ProviderFailure(
            f"{config.api_key_env} is not set: export it, or put it in .env at the project root "
            f"(needed for {config.name}/… models)"
        )
    return key


def sdk_timeout() -> Any:
    import httpx2  # already loaded by the SDK that calls this

    return httpx2.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT)


def where(config: ProviderConfig, default_url: str) -> str:
    return config.base_url or default_url


def is_local(url: str) -> bool:
    return bool(re.match(r"https?://(localhost|127\.|0\.0\.0\.0|\[::1\])", url))


# ---- errors ---------------------------------------------------------------------------------


def _detail(exc: BaseException) -> str:
    """The API's own error text, not the SDK's "Error code: 429 - {...}" wrapper, with what
    makes it useful: the error type (Anthropic's `overloaded_error`…) and the upstream
    provider's own words that OpenRouter puts in `metadata.raw` behind a generic message."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error") if isinstance(body.get("error"), dict) else body
        message = inner.get("message")
        if isinstance(message, str) and message:
            kind = inner.get("type") if body.get("type") == "error" else None  # Anthropic's
            if isinstance(kind, str) and kind not in message:
                message = f"{kind}: {message}"
            metadata = inner.get("metadata")
            if isinstance(metadata, dict):
                raw, upstream = metadata.get("raw"), metadata.get("provider_name")
                if isinstance(upstream, str) and upstream:
                    message = f"{message} ({upstream})"
                if raw is not None:
                    raw = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
                    message = f"{message}: {' '.join(raw.split())}"
            return message[:600]
    text = getattr(exc, "message", None) or str(exc)
    return str(text)[:300]


def _root_cause(exc: BaseException) -> str:
    while exc.__cause__ is not None or exc.__context__ is not None:
        nxt = exc.__cause__ or exc.__context__
        assert nxt is not None
        exc = nxt
    return str(exc) or type(exc).__name__


def _retry_after(response: Any) -> float | None:
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / scale)
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
    return None


def _is_connection_error(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    return (
        bool(names & {"APIConnectionError", "APITimeoutError", "TransportError"})
        or type(exc).__module__.startswith("httpx")
        or isinstance(exc, (ConnectionError, TimeoutError))
    )


def failure_from(
    exc: BaseException,
    config: ProviderConfig,
    url: str,
    key: str | None,
    *,
    streaming: bool = False,
) -> ProviderFailure:
    """Map any SDK or transport error to a ProviderFailure fit for the user."""
    if isinstance(exc, ProviderFailure):
        return exc
    status = getattr(exc, "status_code", None)
    retryable, retry_after = False, None
    name = config.name
    if isinstance(status, int) and status >= 400:
        detail = _detail(exc)
        if status == 401 and config.api_key_env:
            # The API's text often echoes part of the key: leave it out entirely.
            msg = (
                f"{config.api_key_env} was rejected ({status}): check the key in your "
                f"environment or .env"
            )
        elif status in (401, 403):
            hint = (
                f" (check {config.api_key_env})"
                if config.api_key_env
                else (f" (set api_key_env in [providers.{name}])" if status == 401 else "")
            )
            msg = f"{name}: access denied ({status}): {detail}{hint}"
        elif status == 429:
            msg, retryable = f"{name}: rate limited (429): {detail}", True
            retry_after = _retry_after(getattr(exc, "response", None))
        elif status >= 500 or status in (408, 409):
            msg, retryable = f"{name}: server error ({status}): {detail}", True
            retry_after = _retry_after(getattr(exc, "response", None))
        else:
            msg = f"{name}: request rejected ({status}): {detail}"
    elif _is_connection_error(exc):
        retryable = True
        cause = _root_cause(exc)
        if streaming:
            msg = f"{name}: connection lost mid-reply ({cause})"
        else:
            hint = " — is the server running?" if is_local(url) else ""
            msg = f"{name}: cannot reach {url} ({cause}){hint}"
    elif status is not None or getattr(exc, "body", None) is not None:
        # An error event inside a 200 stream (e.g. Anthropic "overloaded_error").
        detail = _detail(exc)
        body = getattr(exc, "body", None)
        inner = body.get("error") if isinstance(body, dict) else None
        inner = inner if isinstance(inner, dict) else body if isinstance(body, dict) else {}
        retryable = inner.get("type") in RETRYABLE_KINDS
        msg = f"{name}: error from the API: {detail}"
    else:
        msg = f"{name}: {type(exc).__name__}: {exc}"
    return ProviderFailure(
        mask_secret(msg, key),
        status=status if isinstance(status, int) and status >= 400 else None,
        retryable=retryable,
        retry_after=retry_after,
    )


# ---- history --------------------------------------------------------------------------------


def clean_history(messages: Sequence[Message]) -> list[Message]:
    """Drop what no API accepts: empty assistant turns (an interrupt before any text), calls
    that never got a result (cut or interrupted), and results whose call is gone."""
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    called: set[str] = set()
    out: list[Message] = []
    for m in messages:
        if m.role == "assistant":
            calls = tuple(c for c in m.tool_calls if c.id in answered)
            if not m.content and not calls:
                continue
            if calls != m.tool_calls:
                m = replace(m, tool_calls=calls)
            called.update(c.id for c in calls)
        elif m.role == "tool" and m.tool_call_id not in called:
            continue
        out.append(m)
    return out


def unique_id(call_id: str, taken: set[str]) -> str:
    """A call id no other call of the conversation has (the same id twice would pair results
    with the wrong call); `taken` grows by it. A server's own id is kept when it is free."""
    base = call_id or "call"
    new, n = base, 1
    while not new or new in taken:
        n += 1
        new = f"{base}_{n}"
    taken.add(new)
    return new


IMAGE_CAP = 20 * 1024 * 1024  # providers refuse bigger images anyway


def load_image(path: str) -> tuple[str, str] | None:
    """(media type, base64 data) of an image file, or None when it cannot be sent."""
    p = Path(path).expanduser()
    media = mimetypes.guess_type(p.name)[0]
    if media not in IMAGE_TYPES:
        return None
    from tuiapp.security import project_files  # a FIFO or a 10 GB "image" is never read

    try:
        data = project_files.read_bytes(p, IMAGE_CAP)
    except project_files.ProjectFileError:
        return None
    return None if data is None else (media, base64.b64encode(data).decode("ascii"))


def image_note(path: str) -> str:
    return f"[image {path} could not be attached: missing, unreadable or not png/jpeg/gif/webp]"


def text_then_images(m: Message, text_part: Callable[[str], dict[str, Any]],
                     image_part: Callable[[str, str], dict[str, Any]], keep: set[object]
                     ) -> str | list[dict[str, Any]]:
    """A user message's content for the OpenAI APIs: plain text, or with images the text part
    then one part per image (`image_part(media type, base64)`), or a note on why one could not
    be attached. `keep` is images_to_send's answer: an image left out is named by a note. The
    two APIs differ only in the shape of the parts."""
    if not m.images and not m.attachments:
        return m.content
    parts = [image_part(a.media_type, a.data) if id(a) in keep else text_part(not_sent(a.name))
             if a.is_image else text_part(attachment_text(a)) for a in m.attachments]
    parts += [text_part(m.content)] if m.content else []
    for i, path in enumerate(m.images):
        image = load_image(path) if path_key(m, i) in keep else None
        parts.append(text_part(user_image_note(m, i, keep)) if image is None
                     else image_part(*image))
    return parts


def not_sent(name: str) -> str:
    return f"[image {name} not sent: {HISTORY_NOTE}]"


def path_key(m: Message, i: int) -> tuple[int, int]:
    """The key of a message's i-th image path in images_to_send's answer."""
    return (id(m), i)


def user_image_note(m: Message, i: int, keep: set[object]) -> str:
    path = m.images[i]
    return image_note(path) if path_key(m, i) in keep else not_sent(path)


def attachment_text(a: Attachment) -> str:
    """An attached file's or resource's text as the model reads it: tagged with its name, so
    the message can refer to it (`@name`) and its end is unmistakable."""
    return f"<attachment name={json.dumps(a.name, ensure_ascii=False)}>\n{a.text}\n</attachment>"


def text_only_result(m: Message, why: str) -> str:
    """A tool result for an API that takes text only: each image's placeholder says it was
    not sent, and why."""
    return result_with_images(m, set(), why)[0]


def result_with_images(m: Message, keep: set[object], why: str = HISTORY_NOTE
                       ) -> tuple[str, list[ToolImage]]:
    """A tool result's text and the images to send with it: those in `keep` (ids, from
    images_to_send); the placeholder of each other one says why it was not sent."""
    text, sent = m.content, []
    for image in m.tool_images:
        if id(image) in keep:
            sent.append(image)
        else:
            text = text.replace(image.placeholder(), image.placeholder(why), 1)
    return text, sent


def images_to_send(messages: Sequence[Message]) -> set[object]:
    """The images a request carries, of every kind (a tool result's, an `@` attachment's, a
    message's image path): the newest, up to HISTORY_IMAGES and HISTORY_IMAGE_B64 (every
    request resends the whole history, and the APIs cap a request's size and image count);
    older ones are named by a note. Keys: id() of a ToolImage or Attachment, path_key()."""
    keep: set[object] = set()
    total = 0
    for m in reversed(messages):
        sized: list[tuple[object, int]] = [(id(t), len(t.data)) for t in m.tool_images]
        sized += [(id(a), len(a.data)) for a in m.attachments if a.is_image]
        sized += [(path_key(m, i), _b64_size(p)) for i, p in enumerate(m.images)]
        for key, size in reversed(sized):
            if len(keep) >= HISTORY_IMAGES or total + size > HISTORY_IMAGE_B64:
                return keep
            keep.add(key)
            total += size
    return keep


def _b64_size(path: str) -> int:
    """The base64 size of an image path's file (not read: load_image reads only what is kept)."""
    try:
        return (Path(path).expanduser().stat().st_size + 2) // 3 * 4
    except OSError:
        return 0


def object_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    """Every API wants an object schema; tools without parameters declare {}."""
    if not parameters:
        return {"type": "object", "properties": {}}
    if "type" not in parameters:
        return {"type": "object", **parameters}
    return parameters


def call_arguments_json(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, ensure_ascii=False)


class SdkProvider(Provider):
    """A provider backed by an SDK client that is built on first use (its import alone costs
    1-2 s) and closed by aclose(). Subclasses name their default URL and client class."""

    default_url: str

    def __init__(self, config: ProviderConfig, model: str) -> None:
        super().__init__(config, model)
        self._client: Any = None
        self._key: str | None = None
        self._url = where(config, self.default_url)

    def _client_class(self) -> Any:
        raise NotImplementedError

    def _get_client(self) -> Any:
        if self._client is None:
            self._key = api_key_for(self.config)
            self._client = self._client_class()(
                api_key=self._key,
                base_url=self.config.base_url or None,
                default_headers=self.config.headers or None,
                max_retries=0,  # kep retries itself, and only before any output
                timeout=sdk_timeout(),
            )
        return self._client

    def _fail(self, exc: BaseException, streaming: bool = False) -> ProviderFailure:
        return failure_from(exc, self.config, self._url, self._key, streaming=streaming)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
