"""The fake LLM server itself: exact SSE framing per API, script edge cases, process mode."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from typing import Any

from fakes.llm_server import FakeLLMProcess, FakeLLMServer


def post(port: int, path: str, body: dict[str, Any]) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(
            "POST",
            path,
            json.dumps(body),
            {"content-type": "application/json", "authorization": "Bearer k-123456789"},
        )
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def blocks(text: str) -> list[list[str]]:
    return [b.split("\n") for b in text.split("\n\n") if b.strip()]


def test_chat_sse_is_data_lines_ending_with_done() -> None:
    with FakeLLMServer(
        [{"text": "a b", "tool_calls": [{"id": "c1", "name": "f", "arguments": {}}]}]
    ) as s:
        status, text = post(
            s.port,
            "/v1/chat/completions",
            {"model": "m", "stream_options": {"include_usage": True}},
        )
    assert status == 200
    bs = blocks(text)
    assert all(len(b) == 1 and b[0].startswith("data: ") for b in bs)
    assert bs[-1] == ["data: [DONE]"]
    chunks = [json.loads(b[0][6:]) for b in bs[:-1]]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 3
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert {c["model"] for c in chunks} == {"m"}


def test_anthropic_sse_has_an_event_line_for_every_event() -> None:
    with FakeLLMServer([{"text": "hi", "tool_calls": [{"name": "f", "arguments": {"x": 1}}]}]) as s:
        status, text = post(s.port, "/v1/messages", {"model": "claude"})
    assert status == 200
    names = []
    for b in blocks(text):
        assert len(b) == 2 and b[0].startswith("event: ") and b[1].startswith("data: ")
        name = b[0][7:]
        assert json.loads(b[1][6:])["type"] == name
        names.append(name)
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert names.count("content_block_start") == names.count("content_block_stop") == 2


def test_responses_sse_events_are_typed_and_sequenced() -> None:
    with FakeLLMServer([{"text": "hi"}]) as s:
        _, text = post(s.port, "/v1/responses", {"model": "gpt"})
    events = [(b[0][7:], json.loads(b[1][6:])) for b in blocks(text)]
    assert all(name == data["type"] for name, data in events)
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    assert events[0][0] == "response.created" and events[-1][0] == "response.completed"


def test_script_exhausted_then_and_echo() -> None:
    with FakeLLMServer() as s:
        status, text = post(s.port, "/v1/chat/completions", {"model": "m"})
        assert status == 400 and "script exhausted" in text
        s.then = {"echo": True}
        _, text = post(
            s.port,
            "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "ping me"}]},
        )
        deltas = [json.loads(b[0][6:]) for b in blocks(text)[:-1]]
        said = "".join(
            d["choices"][0]["delta"].get("content") or "" for d in deltas if d["choices"]
        )
        assert said == "echo: ping me"
        assert [r.api for r in s.requests] == ["chat", "chat"]


def test_http_error_carries_retry_after_and_echoes_the_key() -> None:
    with FakeLLMServer([{"error": 429, "retry_after": 2}, {"error": 401}]) as s:
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
        conn.request("POST", "/v1/responses", "{}", {"authorization": "Bearer k-123456789"})
        resp = conn.getresponse()
        assert resp.status == 429 and resp.getheader("retry-after") == "2"
        resp.read()
        conn.close()
        status, text = post(s.port, "/v1/responses", {})
        assert status == 401 and "k-123456789" in text


def test_client_walking_away_is_counted() -> None:
    with FakeLLMServer([{"text": "w " * 200, "delay": 0.01}]) as s:
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
        conn.request("POST", "/v1/chat/completions", "{}")
        resp = conn.getresponse()
        resp.read1(10)
        resp.close()
        conn.close()
        deadline = time.monotonic() + 5
        while s.aborted == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert s.aborted == 1


def test_process_mode_serves_and_logs(tmp_path: Path) -> None:
    with FakeLLMProcess([{"text": "from a process"}], tmp_path) as proc:
        status, text = post(proc.port, "/v1/chat/completions", {"model": "m", "messages": []})
        assert status == 200 and "process" in text
        [req] = proc.requests()
        assert req.api == "chat" and req.body == {"model": "m", "messages": []}
    assert proc.proc is not None and proc.proc.returncode is not None
