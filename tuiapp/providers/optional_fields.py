"""Optional request fields a server refused, learned once per provider and model.

kep sends a few fields a model may not take (Responses `include` of encrypted reasoning and
`reasoning.summary`, which gpt-4o/gpt-4.1 refuse; Chat `stream_options` or `reasoning_effort`,
which some local servers refuse). A 400 that names one of them drops it for that provider and
model for the rest of the process, with one notice; the request is sent again at once. A 400
about the conversation itself (an input item, a message) is never read as a refused field.
"""

from __future__ import annotations

import re
from typing import Any

# (provider name, model) → the fields it refused, in the order they were learned
_LEARNED: dict[tuple[str, str], list[str]] = {}
# The pairs whose notice was given (a second provider object for the same model says nothing)
_TOLD: set[tuple[str, str]] = set()

# A 400 about what the conversation holds, not about kep's options.
_INPUT_ERROR = re.compile(r"\bof type '|\bItem '|\binput\[|\bmessages\[|\bmessages\.\d")


def forget() -> None:
    """Drop everything learned (tests; a long-lived process that wants a fresh start)."""
    _LEARNED.clear()
    _TOLD.clear()


def refused(provider: str, model: str) -> list[str]:
    return _LEARNED.get((provider, model), [])


def learn(provider: str, model: str, field: str) -> None:
    fields = _LEARNED.setdefault((provider, model), [])
    if field not in fields:
        fields.append(field)


def notice(provider: str, model: str, names: dict[str, str] | None = None) -> str | None:
    """The one line that says what kep stopped sending to this model, the first time only.
    `names` maps a field to how the user knows it (include → its value)."""
    key = (provider, model)
    fields = _LEARNED.get(key)
    if not fields or key in _TOLD:
        return None
    _TOLD.add(key)
    shown = ", ".join((names or {}).get(f, f) for f in fields)
    return (f"{provider}/{model} does not take {shown}: kep no longer sends "
            f"{'it' if len(fields) == 1 else 'them'} to this model")


def _error_parts(exc: BaseException) -> tuple[str | None, str]:
    """(param, message) of an SDK's 400: the API's JSON `param` when it has one."""
    body: Any = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    param = getattr(exc, "param", None)
    message = str(exc)
    if isinstance(body, dict):
        param = param or body.get("param")
        if isinstance(body.get("message"), str):
            message = body["message"]
    return (param if isinstance(param, str) and param else None), message


def rejected(exc: BaseException, sent: dict[str, tuple[str, ...]]) -> str | None:
    """The optional field a 400 refuses, among those sent: `sent` maps each field to the
    words that name it in an error (its own name first). None for any other error."""
    if getattr(exc, "status_code", None) not in (400, 422):
        return None
    param, message = _error_parts(exc)
    if param is not None and (param == "input" or param.startswith(("input[", "messages"))):
        return None
    if _INPUT_ERROR.search(message):
        return None
    # Longest names first: `reasoning.summary` before `reasoning`.
    order = sorted(sent, key=len, reverse=True)
    if param is not None:
        for field in order:
            if param == field or param.startswith(field + "."):
                return field
    for field in order:
        if any(word in message for word in sent[field]):
            return field
    return None
