"""A loopback fake LLM server speaking three streaming wire protocols exactly (stdlib only).

Routes (chosen by how the path ends, so one base URL serves every SDK: `server.base_url`,
"http://127.0.0.1:PORT/v1"):
  POST …/responses         OpenAI Responses SSE (`event:` + `data:`, ends with response.completed)
  POST …/chat/completions  OpenAI Chat Completions SSE (`data:` only, ends with `data: [DONE]`;
                           a usage chunk when the request asked for stream_options.include_usage)
  POST …/messages          Anthropic Messages SSE (every event has an `event:` line)

Script: a list of replies, consumed one per POST in order, whatever the API. A reply is a dict:

  {"text": "Hello there"}                 streamed word by word (one delta per word)
  {"text": ["Hel", "lo"]}                 explicit deltas
  {"lorem": 30000}                        + 30000 filler words, one delta each (big, fast streams;
                                          the SDKs parse ~5k (openai) to ~30k (anthropic) deltas/s)
  {"lorem": 30000, "words_per_delta": 8}  the same words in fewer, bigger deltas
  {"echo": true}                          text = "echo: " + the last user text of the request
  {"tool_calls": [CALL, ...]}             function calls, after the text if any; CALL is
      {"name": "readfile",
       "arguments": {"filename": "x"}     a dict (sent as JSON) or a str (sent raw, maybe not JSON)
       "id": "call_7",                    optional; default unique per server
       "fragments": ["{\"fi", ...],       optional explicit argument fragments
       "fragment_size": 7}                optional; chars per fragment (default 7)
  {"interleave": true}                    chat only: parallel calls' fragments round-robin
  {"stop": "max_tokens"}                  default "tool_use" with calls, else "end_turn"; rendered
                                          per API (chat "length", responses `response.incomplete`)
  {"usage": {"input_tokens": 12, "output_tokens": 3}}   default: body bytes / 4, number of deltas
  {"delay": 0.05}                         seconds slept before each SSE event
  {"cut_after": 3}                        the socket is closed after 3 deltas (text or argument
                                          fragments; after the last one if fewer): a broken stream
  {"end_after": 3}                        the body ends cleanly after 3 deltas, without the
                                          terminal events (no response.completed / [DONE] …)
  {"stream_error": "Overloaded", "error_after": 2}   the API's in-stream error event after 2 deltas
  {"error": 429, "message": "slow down", "retry_after": 0}   an HTTP error in the API's JSON shape
                                          (401 echoes the received key, as real APIs partly do)
  {"error": 429, "body": {...}}           an HTTP error with exactly this JSON body
  {"sse": [{"event": "x", "data": {...}}, {"data": "[DONE]"}]}   these events verbatim (recorded
                                          shapes: tests/fakes/recorded.py); "event" optional
  {"require": ["\"reasoning_content\":\"Let", ...], "status": 400, "message": "…"}
                                          the request body (compact JSON) must contain every
                                          string, else this error answers (as real servers do
                                          when the reasoning they need back is missing); when
                                          it does, the rest of the reply is used as usual

GET …/models answers `server.models` (a listing body, or (status, body)) when set.

When the script runs out the server answers 400 "fake server: script exhausted", unless a
`then` reply was given (FakeLLMServer(script, then={"echo": True}) answers forever).
A script file is JSON: a list of replies, or {"replies": [...], "then": {...}}.

Request log: `server.requests`, a list of LoggedRequest(api, method, path, headers (lower-case
names), body (parsed JSON)). `server.aborted` counts streams the client walked away from.

Use:
  with FakeLLMServer([{"text": "hi"}]) as server:    # a thread: fine for sync and async tests
      ... base_url=server.base_url ...
      server.requests[0].body["messages"]

  python tests/fakes/llm_server.py --script S.json --port-file P [--log L.jsonl] [--port N]
  or from a test:  with FakeLLMProcess(script, tmp_path) as proc: proc.base_url, proc.requests()
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Reply = dict[str, Any]

LOREM = [
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
]


@dataclass
class LoggedRequest:
    api: str | None  # "responses" | "chat" | "anthropic" | None (unknown route)
    method: str
    path: str
    headers: dict[str, str]
    body: Any

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Call:
    id: str
    name: str
    arguments: str
    fragments: list[str]


@dataclass
class _Plan:
    """A reply resolved against one request: everything the SSE writers need."""

    model: str
    deltas: list[str]
    calls: list[_Call]
    stop: str
    input_tokens: int
    output_tokens: int
    interleave: bool
    include_usage: bool
    uid: int

    @property
    def text(self) -> str:
        return "".join(self.deltas)


@dataclass
class _Ev:
    name: str | None  # the `event:` line (None: chat, data only)
    data: Any  # dict, or "[DONE]"
    delta: bool = False  # counts for cut_after / error_after
    end_of_content: bool = False  # marker: no data, the terminal events follow


def route(path: str) -> str | None:
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/messages"):
        return "anthropic"
    return None


# ---- turning a reply into a plan ---------------------------------------------------------


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text)


def _last_user_text(body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    items = body.get("messages") or body.get("input") or []
    if isinstance(items, str):
        return items
    for item in reversed(items):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(p["text"] for p in content if isinstance(p, dict) and "text" in p)
    return ""


def _plan(reply: Reply, body: Any, raw_len: int, ids: Iterator[int]) -> _Plan:
    uid = next(ids)
    text = reply.get("text", "")
    deltas = list(text) if isinstance(text, list) else _words(text)
    if reply.get("echo"):
        deltas += _words("echo: " + _last_user_text(body))
    if reply.get("lorem"):
        words = [LOREM[i % len(LOREM)] + " " for i in range(int(reply["lorem"]))]
        per = max(1, int(reply.get("words_per_delta", 1)))
        deltas += ["".join(words[i : i + per]) for i in range(0, len(words), per)]
    calls = []
    for spec in reply.get("tool_calls", ()):
        args = spec.get("arguments", {})
        if "fragments" in spec and "arguments" not in spec:
            args = "".join(spec["fragments"])
        raw = args if isinstance(args, str) else json.dumps(args)
        size = max(1, int(spec.get("fragment_size", 7)))
        frags = list(spec.get("fragments") or [raw[i : i + size] for i in range(0, len(raw), size)])
        calls.append(_Call(spec.get("id") or f"call_{next(ids)}", spec["name"], raw, frags))
    usage = reply.get("usage", {})
    n_deltas = len(deltas) + sum(len(c.fragments) for c in calls)
    body = body if isinstance(body, dict) else {}
    return _Plan(
        model=str(body.get("model", "fake-model")),
        deltas=deltas,
        calls=calls,
        stop=reply.get("stop") or ("tool_use" if calls else "end_turn"),
        input_tokens=int(usage.get("input_tokens", max(1, raw_len // 4))),
        output_tokens=int(usage.get("output_tokens", n_deltas)),
        interleave=bool(reply.get("interleave")),
        include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
        uid=uid,
    )


# ---- the three SSE dialects ---------------------------------------------------------------


def responses_events(p: _Plan) -> Iterator[_Ev]:
    seq = itertools.count()

    def ev(kind: str, is_delta: bool = False, /, **data: Any) -> _Ev:
        return _Ev(kind, {"type": kind, **data, "sequence_number": next(seq)}, is_delta)

    resp: dict[str, Any] = {
        "id": f"resp_{p.uid}",
        "object": "response",
        "created_at": int(time.time()),
        "model": p.model,
        "status": "in_progress",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": None,
        "top_p": None,
        "usage": None,
    }
    yield ev("response.created", response=resp)
    yield ev("response.in_progress", response=resp)
    output: list[dict[str, Any]] = []
    if p.deltas:
        mid = f"msg_{p.uid}"
        item: dict[str, Any] = {
            "id": mid,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        yield ev("response.output_item.added", output_index=0, item=item)
        part = {"type": "output_text", "text": "", "annotations": []}
        yield ev(
            "response.content_part.added", item_id=mid, output_index=0, content_index=0, part=part
        )
        for d in p.deltas:
            yield ev(
                "response.output_text.delta",
                True,
                item_id=mid,
                output_index=0,
                content_index=0,
                delta=d,
                logprobs=[],
            )
        yield ev(
            "response.output_text.done",
            item_id=mid,
            output_index=0,
            content_index=0,
            text=p.text,
            logprobs=[],
        )
        part = {**part, "text": p.text}
        yield ev(
            "response.content_part.done", item_id=mid, output_index=0, content_index=0, part=part
        )
        item = {**item, "status": "completed", "content": [part]}
        yield ev("response.output_item.done", output_index=0, item=item)
        output.append(item)
    for call in p.calls:
        idx = len(output)
        fc: dict[str, Any] = {
            "id": f"fc_{call.id}",
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call.id,
            "name": call.name,
        }
        yield ev("response.output_item.added", output_index=idx, item=fc)
        for frag in call.fragments:
            yield ev(
                "response.function_call_arguments.delta",
                True,
                item_id=fc["id"],
                output_index=idx,
                delta=frag,
            )
        yield ev(
            "response.function_call_arguments.done",
            item_id=fc["id"],
            output_index=idx,
            arguments=call.arguments,
        )
        fc = {**fc, "status": "completed", "arguments": call.arguments}
        yield ev("response.output_item.done", output_index=idx, item=fc)
        output.append(fc)
    yield _Ev(None, None, end_of_content=True)
    usage = {
        "input_tokens": p.input_tokens,
        "output_tokens": p.output_tokens,
        "total_tokens": p.input_tokens + p.output_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    done = {**resp, "output": output, "usage": usage}
    if p.stop == "max_tokens":
        done.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
        yield ev("response.incomplete", response=done)
    else:
        yield ev("response.completed", response={**done, "status": "completed"})


def responses_error_event(p: _Plan, message: str) -> _Ev:
    resp = {
        "id": f"resp_{p.uid}",
        "object": "response",
        "created_at": int(time.time()),
        "model": p.model,
        "status": "failed",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": {"code": "server_error", "message": message},
    }
    return _Ev(
        "response.failed", {"type": "response.failed", "response": resp, "sequence_number": 0}
    )


CHAT_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def chat_events(p: _Plan) -> Iterator[_Ev]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{p.uid}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": p.model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    yield _Ev(None, chunk({"role": "assistant", "content": ""}))
    for d in p.deltas:
        yield _Ev(None, chunk({"content": d}), delta=True)
    per_call: list[list[_Ev]] = []
    for i, call in enumerate(p.calls):
        head = {
            "index": i,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        evs = [_Ev(None, chunk({"tool_calls": [head]}))]
        evs += [
            _Ev(None, chunk({"tool_calls": [{"index": i, "function": {"arguments": f}}]}), True)
            for f in call.fragments
        ]
        per_call.append(evs)
    if p.interleave:
        for group in itertools.zip_longest(*per_call):
            yield from (e for e in group if e is not None)
    else:
        for evs in per_call:
            yield from evs
    yield _Ev(None, None, end_of_content=True)
    yield _Ev(None, chunk({}, CHAT_FINISH.get(p.stop, p.stop)))
    if p.include_usage:
        usage = {
            "prompt_tokens": p.input_tokens,
            "completion_tokens": p.output_tokens,
            "total_tokens": p.input_tokens + p.output_tokens,
        }
        yield _Ev(None, {**chunk({}), "choices": [], "usage": usage})
    yield _Ev(None, "[DONE]")


def chat_error_event(message: str) -> _Ev:
    return _Ev(
        None, {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
    )


def anthropic_events(p: _Plan) -> Iterator[_Ev]:
    def ev(kind: str, is_delta: bool = False, /, **data: Any) -> _Ev:
        return _Ev(kind, {"type": kind, **data}, is_delta)

    message = {
        "id": f"msg_{p.uid}",
        "type": "message",
        "role": "assistant",
        "model": p.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": p.input_tokens, "output_tokens": 1},
    }
    yield ev("message_start", message=message)
    index = 0
    if p.deltas:
        yield ev("content_block_start", index=0, content_block={"type": "text", "text": ""})
        yield ev("ping")
        for d in p.deltas:
            yield ev("content_block_delta", True, index=0, delta={"type": "text_delta", "text": d})
        yield ev("content_block_stop", index=0)
        index = 1
    for call in p.calls:
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        yield ev("content_block_start", index=index, content_block=block)
        for frag in call.fragments:
            yield ev(
                "content_block_delta",
                True,
                index=index,
                delta={"type": "input_json_delta", "partial_json": frag},
            )
        yield ev("content_block_stop", index=index)
        index += 1
    yield _Ev(None, None, end_of_content=True)
    yield ev(
        "message_delta",
        delta={"stop_reason": p.stop, "stop_sequence": None},
        usage={"output_tokens": p.output_tokens},
    )
    yield ev("message_stop")


def anthropic_error_event(message: str) -> _Ev:
    return _Ev(
        "error", {"type": "error", "error": {"type": "overloaded_error", "message": message}}
    )


# ---- HTTP error bodies --------------------------------------------------------------------

OPENAI_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_denied", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}
ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(api: str | None, status: int, message: str | None, key: str) -> dict[str, Any]:
    if api == "anthropic":
        kind = ANTHROPIC_ERRORS.get(status, "api_error")
        default = f"invalid x-api-key {key}" if status == 401 else f"fake {kind}"
        return {
            "type": "error",
            "error": {"type": kind, "message": message or default},
            "request_id": "req_fake",
        }
    kind, code = OPENAI_ERRORS.get(status, ("server_error", None))
    default = f"Incorrect API key provided: {key}." if status == 401 else f"fake {kind}"
    return {"error": {"message": message or default, "type": kind, "param": None, "code": code}}


# ---- the server ---------------------------------------------------------------------------


class _Cut(Exception):
    """The script asked to drop the connection here."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked bodies, like real APIs
    timeout = 60
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        fake = self.server.fake
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake._log(LoggedRequest(None, "GET", self.path, headers, None))
        path = self.path.split("?", 1)[0].rstrip("/")
        if fake.models is not None and path.endswith(("/models", "/api/tags")):
            status, body = fake.models if isinstance(fake.models, tuple) else (200, fake.models)
            if isinstance(body, bytes):  # a raw body (not JSON, huge…)
                self.send_response(status)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self._send_json(status, body)
            return
        self._send_json(404, {"error": {"message": f"fake server: no GET {self.path}"}})

    def do_POST(self) -> None:
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        api = route(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake._log(LoggedRequest(api, "POST", self.path, headers, body))
        if api is None:
            self._send_json(404, {"error": {"message": f"fake server: no route {self.path}"}})
            return
        reply = fake._next_reply()
        if reply is None:
            self._send_json(400, error_body(api, 400, "fake server: script exhausted", ""))
            return
        compact = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
        missing = [r for r in reply.get("require", ()) if r not in compact]
        if missing:
            status = int(reply.get("status", 400))
            message = reply.get("message") or f"fake server: request lacks {missing[0]}"
            self._send_json(status, error_body(api, status, message, ""))
            return
        if "error" in reply and "body" in reply:
            self._send_json(int(reply["error"]), reply["body"])
            return
        if "error" in reply:
            status = int(reply["error"])
            key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix(
                "Bearer "
            )
            extra = {}
            if reply.get("retry_after") is not None:
                extra["retry-after"] = str(reply["retry_after"])
            self._send_json(status, error_body(api, status, reply.get("message"), key), extra)
            return
        plan = _plan(reply, body, len(raw), fake._ids)
        events = {
            "responses": responses_events,
            "chat": chat_events,
            "anthropic": anthropic_events,
        }[api]
        if "sse" in reply:
            events = lambda _plan: [_Ev(e.get("event"), e["data"]) for e in reply["sse"]]  # noqa: E731
        try:
            self._stream(api, plan, events(plan), reply)
        except _Cut:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True
            fake._aborted()

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("x-request-id", "req_fake")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, api: str, plan: _Plan, events: Iterable[_Ev], reply: Reply) -> None:
        delay = float(reply.get("delay", 0))
        cut_after = reply.get("cut_after")
        end_after = reply.get("end_after")
        stream_error = reply.get("stream_error")
        error_after = int(reply.get("error_after", 0))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("x-request-id", f"req_{plan.uid}")
        self.end_headers()
        buf = bytearray()

        def flush() -> None:
            if buf:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(buf), bytes(buf)))
                buf.clear()

        sent = 0
        for ev in events:
            if ev.delta or ev.end_of_content:
                if cut_after is not None and sent >= int(cut_after):
                    flush()
                    raise _Cut
                if end_after is not None and sent >= int(end_after):
                    break
                if stream_error and sent >= error_after:
                    err = {
                        "responses": lambda: responses_error_event(plan, stream_error),
                        "chat": lambda: chat_error_event(stream_error),
                        "anthropic": lambda: anthropic_error_event(stream_error),
                    }[api]()
                    buf += _sse(err)
                    break
                sent += ev.delta
            if ev.end_of_content:
                continue
            if delay and self.server.stopping.wait(delay):
                raise _Cut
            buf += _sse(ev)
            if delay or len(buf) > 32768:
                flush()
        flush()
        self.wfile.write(b"0\r\n\r\n")


def _sse(ev: _Ev) -> bytes:
    data = ev.data if isinstance(ev.data, str) else json.dumps(ev.data, separators=(",", ":"))
    head = f"event: {ev.name}\n" if ev.name else ""
    return f"{head}data: {data}\n\n".encode()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeLLMServer
    stopping: threading.Event


class FakeLLMServer:
    """The scripted server in a background thread. Use as a context manager or start()/stop()."""

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        then: Reply | None = None,
        port: int = 0,
        log_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self._replies = list(replies)
        self.then = then
        self.requests: list[LoggedRequest] = []
        self.aborted = 0
        # GET …/models (and Ollama's /api/tags) answers this: a JSON body, raw bytes, or
        # (status, body); None: 404, as a server without a model list.
        self.models: Any = None
        self._port = port
        self._log_path = Path(log_path) if log_path else None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: _HTTPServer | None = None

    # -- lifecycle
    def start(self) -> FakeLLMServer:
        httpd = _HTTPServer(("127.0.0.1", self._port), _Handler)
        httpd.fake = self
        httpd.stopping = threading.Event()
        self._httpd = httpd
        threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-llm", daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._httpd:
            self._httpd.stopping.set()
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses
    @property
    def port(self) -> int:
        assert self._httpd, "server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """Works as base_url for all three SDKs (routes go by path ending)."""
        return self.url + "/v1"

    # -- script and log
    def add(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._replies)

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.requests) >= n:
                return True
            time.sleep(0.01)
        return len(self.requests) >= n

    def _next_reply(self) -> Reply | None:
        with self._lock:
            return self._replies.pop(0) if self._replies else self.then

    def _log(self, req: LoggedRequest) -> None:
        with self._lock:
            self.requests.append(req)
            if self._log_path:
                with self._log_path.open("a") as f:
                    f.write(json.dumps(req.to_json()) + "\n")

    def _aborted(self) -> None:
        with self._lock:
            self.aborted += 1


def parse_script(obj: Any) -> tuple[list[Reply], Reply | None]:
    if isinstance(obj, list):
        return obj, None
    if isinstance(obj, dict):
        return list(obj.get("replies", [])), obj.get("then")
    raise ValueError('a script is a JSON list of replies or {"replies": [...], "then": {...}}')


def read_log(path: str | os.PathLike[str]) -> list[LoggedRequest]:
    p = Path(path)
    if not p.exists():
        return []
    return [
        LoggedRequest(**json.loads(line)) for line in p.read_text().splitlines() if line.strip()
    ]


class FakeLLMProcess:
    """The server as a separate process (for CLI tests that kill or outlive the test's threads)."""

    def __init__(
        self,
        replies: Iterable[Reply],
        workdir: str | os.PathLike[str],
        *,
        then: Reply | None = None,
    ) -> None:
        self.workdir = Path(workdir)
        self.script = {"replies": list(replies), "then": then}
        self.log_path = self.workdir / "llm_requests.jsonl"
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> FakeLLMProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        script, port_file = self.workdir / "llm_script.json", self.workdir / "llm_port"
        script.write_text(json.dumps(self.script))
        port_file.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--script",
                str(script),
                "--port-file",
                str(port_file),
                "--log",
                str(self.log_path),
            ]
        )
        deadline = time.monotonic() + 15
        while not port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError("fake LLM server process did not start")
            time.sleep(0.02)
        self.port = int(port_file.read_text())
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def requests(self) -> list[LoggedRequest]:
        return read_log(self.log_path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Scripted fake LLM server (loopback, for tests).")
    ap.add_argument("--script", required=True, help="JSON file: list of replies or {replies, then}")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", help="write the bound port here once listening")
    ap.add_argument("--log", help="append each request as one JSON line")
    args = ap.parse_args(argv)
    replies, then = parse_script(json.loads(Path(args.script).read_text()))
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    server = FakeLLMServer(replies, then=then, port=args.port, log_path=args.log).start()
    if args.port_file:
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(str(server.port))
        os.replace(tmp, args.port_file)  # atomic: readers never see an empty file
    print(f"fake LLM server on {server.base_url}", flush=True)
    done.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
