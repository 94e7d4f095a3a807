"""What models a provider's server offers, from its `/models` endpoint, for the model picker.

One GET per provider, cached for the process (TTL), never through an SDK (a listing must not
cost the SDK's import). Shapes read: OpenAI, OpenRouter, vLLM, LM Studio and Ollama's `/v1`
(`{"data": [{"id": …}]}`), Anthropic (`data` of `{"type": "model", "id": …}` with
`x-api-key`), llama.cpp (`data` and/or `models` of `{"name"|"model": …}`), Ollama's
`/api/tags` (`models` of `{"name": …}`). The body is capped and every id checked: a hostile
server cannot flood the picker or put a control sequence in it. An unreachable server or a
refused key is one line, never an exception.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

from tuiapp.providers.base import mask_secret
from tuiapp.settings.config_types import ProviderConfig

TTL = 600.0  # seconds a listing is reused
TIMEOUT = 4.0  # seconds for the whole request
BODY_CAP = 4 * 1024 * 1024  # bytes read of a listing
MAX_MODELS = 1000  # per provider
_ID = re.compile(r"[^\x00-\x20\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]{1,200}")
DEFAULT_URLS = {"responses": "https://api.openai.com/v1", "chat": "https://api.openai.com/v1",
                "anthropic": "https://api.anthropic.com"}


@dataclass(frozen=True)
class ModelList:
    provider: str
    models: tuple[str, ...] = ()
    error: str = ""  # one line: why nothing could be listed


_CACHE: dict[tuple[str, str], tuple[float, ModelList]] = {}


def forget() -> None:
    _CACHE.clear()


def models_url(pc: ProviderConfig) -> str:
    base = (pc.base_url or DEFAULT_URLS.get(pc.api, "")).rstrip("/")
    if pc.api == "anthropic" and not base.endswith("/v1"):
        base += "/v1"
    return base + "/models"


def parse_models(data: Any) -> list[str]:
    """Model ids of a listing in any of the known shapes; anything else is skipped."""
    if not isinstance(data, dict):
        return []
    out: list[str] = []
    for key in ("data", "models"):
        entries = data.get(key)
        if not isinstance(entries, list):
            continue
        for entry in entries[:MAX_MODELS * 2]:
            name = entry
            if isinstance(entry, dict):
                name = next((entry[k] for k in ("id", "name", "model")
                             if isinstance(entry.get(k), str)), None)
            if isinstance(name, str) and _ID.fullmatch(name) and name not in out:
                out.append(name)
    return out[:MAX_MODELS]


def cached(pc: ProviderConfig) -> ModelList | None:
    hit = _CACHE.get((pc.name, models_url(pc)))
    if hit is None or time.monotonic() - hit[0] > TTL:
        return None
    return hit[1]


async def list_models(pc: ProviderConfig) -> ModelList:
    """The provider's models (cached), or why they cannot be listed."""
    if (hit := cached(pc)) is not None:
        return hit
    result = await _fetch(pc)
    if not result.error:  # a server down now may be up in a minute
        _CACHE[(pc.name, models_url(pc))] = (time.monotonic(), result)
    return result


async def _fetch(pc: ProviderConfig) -> ModelList:
    import httpx2

    key = pc.api_key() if pc.api_key_env else None
    if pc.api_key_env and not key:
        return ModelList(pc.name, error=f"needs {pc.api_key_env}")
    headers = dict(pc.headers)
    if pc.api == "anthropic":
        headers.update({"anthropic-version": "2023-06-01", **({"x-api-key": key} if key else {})})
    elif key:
        headers["authorization"] = f"Bearer {key}"
    url = models_url(pc)
    try:
        async with httpx2.AsyncClient(timeout=TIMEOUT) as client, \
                client.stream("GET", url, headers=headers) as response:
            if response.status_code >= 400:
                why = {401: "key rejected", 403: "access denied",
                       404: "no model list"}.get(response.status_code, "server error")
                return ModelList(pc.name, error=f"{why} ({response.status_code}) at {url}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > BODY_CAP:
                    return ModelList(pc.name, error=f"the model list at {url} is too large")
        models = parse_models(json.loads(body.decode("utf-8", "replace")))
    except (ValueError, RecursionError):
        return ModelList(pc.name, error=f"{url} did not answer with a model list")
    except Exception as e:  # connection refused, timeout, TLS, a bad URL…
        reason = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
        return ModelList(pc.name, error=mask_secret(f"cannot reach {url} ({reason})", key))
    if pc.api != "anthropic":  # Anthropic lists newest first; the others in no useful order
        models.sort()
    return ModelList(pc.name, tuple(models))
