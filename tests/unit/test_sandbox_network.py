"""Network through kep's proxy: the only way out of the sandbox. A host list is enforced,
"ask" asks (headless: refused unless something says yes), "off" never asks."""

from __future__ import annotations

import asyncio
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_runner import run, tool

from tuiapp.security.sandbox import spawn
from tuiapp.security.sandbox.proxy import host_allowed
from tuiapp.security.sandbox.spawn import visible_python
from tuiapp.settings import config
from tuiapp.tools.runner import Runner

PY = visible_python()
pytestmark = [pytest.mark.skipif(
    spawn.mechanism().missing() is not None and os.environ.get("KEP_TEST_REQUIRE_SANDBOX") != "1",
    reason=f"no sandbox here: {spawn.mechanism().missing()}"),
    pytest.mark.usefixtures("every_start_path")]


@pytest.fixture
def web() -> Iterator[int]:
    class Quiet(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"hello from the host\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()


class Questions(list):  # type: ignore[type-arg]
    answer: dict[str, bool]


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> Iterator[Questions]:
    questions = Questions()
    answer = {"yes": False}

    async def ask(t: str, host: str, port: int) -> bool:
        questions.append((t, host, port))
        return answer["yes"]

    spawn.set_network_asker(ask)
    questions.answer = answer
    yield questions
    spawn.set_network_asker(None)


def fetch(port: int) -> str:
    url = f"http://127.0.0.1:{port}/"
    return (f"{PY} -c \"import urllib.request as u; "
            f"print(u.urlopen('{url}', timeout=5).read().decode().strip())\" 2>&1 | tail -1")


def runner(root: Path, **sandbox: object) -> Runner:
    cfg = config.parse({"tools": {"builtins": False}, "sandbox": sandbox}, "test", root)
    return Runner(cfg, spool_dir=root / ".spool")


async def test_a_host_list_is_enforced(project: Path, web: int, asked: Questions) -> None:
    r = runner(project, network=[f"127.0.0.1:{web}"])
    fin = await run(r, tool(project, "get", fetch(web)))
    assert fin.result == "hello from the host"
    other = runner(project, network=[f"127.0.0.1:{web + 1 if web < 65535 else 1}"])
    fin = await run(other, tool(project, "get2", fetch(web)))
    assert "hello" not in fin.result and "403" in fin.result
    assert [q[0] for q in asked] == ["get2"]  # outside the list: asked (and refused)


async def test_ask_asks_and_the_answer_decides(project: Path, web: int, asked: Questions) -> None:
    r = runner(project)  # network = "ask" by default
    fin = await run(r, tool(project, "get", fetch(web)))
    assert "hello" not in fin.result and asked == [("get", "127.0.0.1", web)]
    asked.answer["yes"] = True
    fin = await run(r, tool(project, "get", fetch(web)))
    assert fin.result == "hello from the host"


async def test_the_proxys_socket_folder_is_removed_when_the_network_stops(
        project: Path, web: int, asked: Questions) -> None:
    """Each proxy makes a private folder in $TMPDIR for its socket: stopping the network
    (a new event loop, or kep's exit) removes it, not one folder left behind per run."""
    asked.answer["yes"] = True
    fin = await run(runner(project), tool(project, "get", fetch(web)))
    assert fin.result == "hello from the host"
    proxy = spawn._state.proxy
    assert proxy is not None and os.path.exists(proxy.path)
    spawn.stop_network()
    assert not os.path.exists(proxy.dir)


async def test_calls_starting_together_start_one_network(
        project: Path, asked: Questions, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several calls needing the network at once share one proxy and holder (each extra one
    was a process and a $TMPDIR folder nothing stopped)."""
    from tuiapp.security.sandbox import proxy

    made: list[proxy.Proxy] = []
    real_init = proxy.Proxy.__init__

    def counted(self: proxy.Proxy) -> None:
        real_init(self)
        made.append(self)

    monkeypatch.setattr(proxy.Proxy, "__init__", counted)
    spawn.stop_network()
    spawn.use_config(runner(project).config)
    await asyncio.gather(*(spawn._ensure_network() for _ in range(4)))
    assert len(made) == 1 and spawn._state.proxy is made[0]
    spawn.stop_network()
    assert not os.path.exists(made[0].dir)


async def test_off_never_asks(project: Path, web: int, asked: Questions) -> None:
    fin = await run(runner(project, network="off"), tool(project, "get", fetch(web)))
    assert "hello" not in fin.result and asked == []


async def test_hostile_requests_to_the_proxy_get_one_refusal(project: Path,
                                                             asked: Questions) -> None:
    await run(runner(project), tool(project, "warm", "true"))  # the proxy is up
    proxy = spawn._state.proxy
    assert proxy is not None
    for req in (b"GARBAGE\r\n\r\n", b"CONNECT nohost HTTP/1.1\r\n\r\n",
                b"GET ftp://x/ HTTP/1.1\r\n\r\n", b"CONNECT a:b HTTP/1.1\r\n\r\n",
                b"GET http://127.0.0.1:1/ HTTP/1.1\r\n" + b"X: " + b"a" * (2 << 20) + b"\r\n\r\n",
                b"CONNECT 127.0.0.1:1 HTTP/1.1\r\nProxy-Authorization: Basic !!!\r\n\r\n"):
        reader, writer = await asyncio.open_unix_connection(proxy.path)
        try:
            writer.write(req)
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(200), 5)
        except (ConnectionResetError, BrokenPipeError):
            answer = b""  # closed on it: refused too
        writer.close()
        assert answer == b"" or answer.startswith(b"HTTP/1.1 4"), (req[:40], answer)
    assert asked == []  # no token, no question


@pytest.mark.parametrize(("rules", "host", "port", "ok"), [
    (("pypi.org:443",), "pypi.org", 443, True), (("pypi.org:443",), "pypi.org", 80, False),
    (("pypi.org",), "PyPI.org", 8443, True), (("*.github.com",), "api.github.com", 443, True),
    (("*.github.com",), "github.com.evil", 443, False), (("[::1]:8080",), "::1", 8080, True),
    (("127.0.0.1:8080",), "127.0.0.1", 8081, False),
])
def test_host_rules(rules: tuple[str, ...], host: str, port: int, ok: bool) -> None:
    assert host_allowed(rules, host, port) is ok


async def test_the_pane_says_which_hosts_were_reached_and_refused(project: Path, web: int,
                                                                  asked: Questions) -> None:
    from test_runner import Recorder

    from tuiapp.vocab.events import ToolOutput

    rec = Recorder()
    r = runner(project, network=[f"127.0.0.1:{web}"])
    other = web + 1 if web < 65535 else 1
    body = f"{fetch(web)}; {fetch(web)}; {fetch(other)}"
    fin = await run(r, tool(project, "get", body), rec=rec)
    pane = "".join(e.text for _, e in rec.events if isinstance(e, ToolOutput))
    assert f"sandbox: network reached through kep's proxy: 127.0.0.1:{web} (2×)" in pane
    assert f"sandbox: network refused through kep's proxy: 127.0.0.1:{other}" in pane
    assert fin.status == "ok"
