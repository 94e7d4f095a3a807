"""Every way text leaves kep passes the one secrets filter: provider requests (every adapter,
with the real SDKs against the loopback fake), the session store (every write), exports, logs,
`kep mcp serve`'s wire, and the files kep writes (found by scanning the source, so a new write
site fails here until it is looked at). Each egress gets a key cut at an offset (what readfile
with offset=16 returned), its base64, hex and percent-encoding."""

from __future__ import annotations

import ast
import base64
import io
import json
import os
import stat
from pathlib import Path
from urllib.parse import quote

import pytest
from fakes.llm_server import FakeLLMServer

from tuiapp.conversation import transcript
from tuiapp.conversation.store import Store
from tuiapp.mcp.server import FilteredWire
from tuiapp.providers import _IMPLEMENTATIONS
from tuiapp.security import redact, secrets
from tuiapp.security.logfile import LogFile
from tuiapp.settings.config_types import ProviderConfig
from tuiapp.vocab.events import MessageAdded, ToolFinished
from tuiapp.vocab.messages import Attachment, Message, Reasoning, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

KEY = "sk-proj-Hq2vW8mRx5Lt0Pn3Yc7Kb1Jd9Gf4Za6Es"
DOT = "dotenv-Vq7Lm2Xp9Rt4Wz8Kc3Nb6"
SRC = Path(__file__).resolve().parents[2] / "tuiapp"


def disguises(value: str) -> dict[str, str]:
    """The shapes a key leaked in: cut at an offset, base64 (two alignments), hex, percent."""
    raw = value.encode()
    return {"offset": value[1:], "tail": value[16:], "base64": base64.b64encode(raw).decode(),
            "base64+1": base64.b64encode(b"=" + raw).decode(),
            "urlsafe": base64.urlsafe_b64encode(b"ab" + raw).decode(), "hex": raw.hex(),
            "percent": quote(value + "/+", safe="")}


def payload(value: str = KEY) -> str:
    return " | ".join(f"{k}: {v}" for k, v in disguises(value).items())


def leaked(data: str | bytes, value: str = KEY) -> list[str]:
    data = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    return sorted({f[i:i + redact.WINDOW].decode("latin-1") for f in redact.forms(value)
                   for i in range(len(f) - redact.WINDOW + 1) if f[i:i + redact.WINDOW] in data})


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    secrets.note_dotenv({"SERVICE_SECRET": DOT})


def every_field_history() -> tuple[list[Message], list[ToolSpec], str]:
    """A request with a disguised key in every field a provider serializes."""
    p = payload() + " " + payload(DOT)
    call = ToolCall("call_1", "readfile", {"filename": ".env", "note": p}, json.dumps({"n": p}))
    history = [
        Message("user", f"included file:\n{p}"),  # `.include .env`, a document, typed text
        Message("assistant", f"echoed {p}", tool_calls=(call,),
                reasoning=Reasoning("responses|p|m", text=p)),
        Message("tool", f"readfile offset=16: {p}", tool_call_id="call_1", name="readfile"),
        Message("assistant", f"the key is {p}"),
        Message("user", "go on", attachments=(Attachment("notes.txt", text=p, size=len(p)),)),
    ]
    tools = [ToolSpec("readfile", f"reads files {p}", {"type": "object", "properties": {
        "filename": {"type": "string", "description": p}}}, "keprompt", "/x/readfile")]
    return history, tools, f"system prompt with a document: {p}"


# ---- provider requests: every adapter kep has, with its real SDK --------------------------------


@pytest.mark.parametrize("api", sorted(a for a in _IMPLEMENTATIONS if a != "offline"))
async def test_no_provider_request_carries_a_key(api: str, keyed: None) -> None:
    history, tools, system = every_field_history()
    with FakeLLMServer() as server:
        server.add({"text": "ok"})
        url = server.url if api == "anthropic" else server.base_url
        env = "ANTHROPIC_API_KEY" if api == "anthropic" else "OPENAI_API_KEY"
        provider = _IMPLEMENTATIONS_CLS(api)(ProviderConfig(f"p{api}", api, url, env), "m")
        try:
            [item async for item in provider.stream(history, tools, system)]
        finally:
            await provider.aclose()
        [req] = server.requests
    body = json.dumps(req.body, ensure_ascii=False)
    assert "[redacted" in body  # the request was built, with the text around the keys
    assert leaked(body) == [] and leaked(body, DOT) == []


def _IMPLEMENTATIONS_CLS(api: str) -> type:
    from importlib import import_module

    module, cls = _IMPLEMENTATIONS[api]
    return getattr(import_module(module), cls)


def test_every_provider_class_filters_by_construction() -> None:
    from tuiapp.providers.base import Provider

    for api in _IMPLEMENTATIONS:
        cls = _IMPLEMENTATIONS_CLS(api)
        assert issubclass(cls, Provider) and getattr(cls.stream, "_filtered", False), api


# ---- the session store: every write -------------------------------------------------------------


def test_nothing_written_to_the_store_carries_a_key(keyed: None, tmp_path: Path) -> None:
    history, _, _ = every_field_history()
    p = payload()
    db = tmp_path / "sessions.db"
    with Store.open(db) as store:
        sid = store.create_session(tmp_path, f"model {p}")
        store.update_model(sid, f"model2 {p}")
        for m in history:
            store.record(sid, MessageAdded(m))
        store.record(sid, ToolFinished("call_1", "readfile", "ok", 0, 5, f"result {p}"))
        from tuiapp.conversation import session_admin

        session_admin.rename(store, sid, f"title {p}")
        # A raw statement, as any future write method would make it.
        store._db.execute("UPDATE sessions SET title=? WHERE id=?", (f"raw {p}", sid))
        assert store.load_messages(sid)  # the JSON stayed valid
    data = b"".join(f.read_bytes() for f in tmp_path.iterdir() if f.name.startswith("sessions"))
    assert leaked(data) == []


def test_the_store_only_ever_connects_through_the_filter() -> None:
    for path in SRC.rglob("*.py"):
        text = path.read_text()
        if "sqlite3.connect(" in text:
            assert path.name == "store.py" and "factory=FilteredConnection" in text, path


# ---- exports: a session stored before the key was known still exports without it ----------------


def test_exports_filter_a_session_stored_raw(keyed: None, tmp_path: Path) -> None:
    p = payload()
    with Store.open(tmp_path / "s.db") as store:
        sid = store.create_session(tmp_path, "m")
        store.record(sid, MessageAdded(Message("user", "hi")))
        # As an older kep stored it: around the filter.
        import sqlite3

        sqlite3.Connection.execute(store._db, "UPDATE messages SET data=? WHERE session_id=?",
                                   (json.dumps(Message("user", p).to_dict()), sid))
        t = transcript.load(store, sid) if hasattr(transcript, "load") else None
        if t is None:
            from tuiapp.conversation.transcript import Transcript

            t = Transcript(store.session_info(sid), store.load_messages(sid, for_resume=False),
                           store.tool_calls(sid))
        for render in (transcript.to_text, transcript.to_markdown, transcript.to_json):
            out = render(t)
            assert "[redacted " in out and leaked(out) == [], render


# ---- logs ---------------------------------------------------------------------------------------


def test_a_log_is_private_filtered_and_capped(keyed: None, tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir(mode=0o755)
    (folder / "mcp-x.log").write_text("old\n")
    (folder / "mcp-x.log").chmod(0o644)
    log = LogFile(folder / "mcp-x.log", secrets.active, cap=64 * 1024)
    log.write("# kep: starting server --token " + KEY + "\n")
    line = f"server says token={KEY} {payload()}\n".encode()
    for i in range(0, len(line), 7):  # stderr arrives in pieces: keys split across reads
        log.write_bytes(line[i:i + 7])
    for n in range(5000):  # a chatty server
        log.write_bytes(f"line {n} {'x' * 60}\n".encode())
    log.write_bytes(line)
    log.close()
    text = (folder / "mcp-x.log").read_bytes()
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(folder / "mcp-x.log").st_mode) == 0o600
    assert leaked(text) == []
    assert len(text) <= 64 * 1024
    assert text.startswith(b"# kep: starting server --token [redacted")  # the head stays
    assert b"bytes of this log dropped here" in text  # the cut is marked
    assert text.endswith(b"\n") and b"line 4999 " in text  # the tail is the newest


def test_a_log_through_a_link_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "mcp-x.log").symlink_to(target)
    with pytest.raises(OSError):
        LogFile(tmp_path / "logs" / "mcp-x.log", secrets.active)
    assert target.read_text() == "keep"


def test_every_log_kep_writes_is_a_logfile() -> None:
    """No FileHandler and no `logs/` path opened any other way."""
    for path in SRC.rglob("*.py"):
        if path.name == "logfile.py":
            continue
        text = path.read_text()
        assert "FileHandler(" not in text, path
        if '"logs"' in text:
            assert "LogFile" in text or "LogHandler" in text, path


# ---- kep mcp serve ------------------------------------------------------------------------------


def test_kep_mcp_serve_filters_every_line_on_the_wire(keyed: None) -> None:
    raw = io.StringIO()
    wire = FilteredWire(raw)
    message = {"jsonrpc": "2.0", "id": 3, "result": {"content": [
        {"type": "text", "text": f"readfile offset=16: {payload()}"}], "isError": False}}
    wire.write(json.dumps(message) + "\n")
    wire.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"message": payload()}}) + "\n")
    lines = raw.getvalue().splitlines()
    assert [json.loads(x)["jsonrpc"] for x in lines] == ["2.0", "2.0"]  # still JSON-RPC
    assert leaked(raw.getvalue()) == []
    mcp_command = (SRC / "commands" / "mcp.py").read_text()
    assert "FilteredWire(" in mcp_command and "stdio_server(stdin, stdout)" in mcp_command


# ---- every file kep writes, found by scanning ---------------------------------------------------

# Each place kep's code opens a file for writing, and why what it writes cannot carry a key
# (or which filter it passes). A new write site fails test_every_write_site_is_accounted_for.
WRITE_SITES = {
    "project/project_marks.py": "project names and paths only",
    "conversation/project_marks.py": "project names and paths only",
    "conversation/session_lock.py": "a lock file: a pid",
    "conversation/store.py": "creates the empty database (0600); rows go through "
                             "FilteredConnection",
    "commands/sessions.py": "writes transcript.to_* output (filtered)",
    "ui/actions.py": "writes transcript.to_markdown output (filtered)",
    "ui/screenshots.py": "demo files of kep's own",
    "ui/prompt_editor.py": "the user's own message, for the user's own editor (a 0600 temp "
                           "file, deleted when the editor exits)",
    "ui/screens/tool_editor.py": "a tool the user wrote in the editor, into their project",
    "tools/call_output.py": "the spool: bytes from the stream filter (CallOutput.redactors)",
    "tools/cache.py": "tool listings (names, schemas) for discovery",
    "tools/listing_snapshot.py": "tool listings for the next start",
    "tools/templates.py": "a new tool from kep's template",
    "tools/process_call.py": "an empty $LLM_OUTPUT file for the tool",
    "tools/formats/_child_python.py": "runs in the tool's child: the tool's own output file",
    "tools/forkserver_boot.py": "/dev/null over the server's stdio",
    "mcp/known_tools.py": "tool names of a server",
    "mcp/oauth_store.py": "the user's OAuth tokens themselves, 0600 in kep's data folder "
                          "(hidden from every tool); each is registered as a secret",
    "mcp/stdio_transport.py": "the server's stderr into its LogFile (errlog.write_bytes)",
    "commands/functions_watch.py": "/dev/null over stdout",
    "commands/mcp.py": "/dev/null, and the wire to the client: through FilteredWire",
    "settings/toml_write.py": "kep.toml edits the user asked for",
    "security/trust.py": "folder trust state (hashes, paths)",
    "security/logfile.py": "every log (filtered, capped, 0600)",
    "settings/file_reader.py": "opens files read-only (its `flags` hold O_RDONLY)",
    "security/sandbox/_child_starter.py": "inside the walls, not in kep: its own uid_map "
                                          "and kin, empty mount points in a call's fresh /tmp",
    "security/sandbox/starters.py": "a call's stdin pipe: the bytes kep gives that call",
    "security/sandbox/probe_memo.py": "a hash of what a passed probe depended on (kep's cache)",
}


def _write_sites() -> set[str]:
    """Modules with a call that opens a file for writing: `open`/`fdopen` with a w, a, x or +
    mode, `os.open` with a write or create flag, write_text/write_bytes, a FileHandler."""
    found = set()
    for path in SRC.rglob("*.py"):
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            modes = [a.value for a in [*node.args[1:2], *(k.value for k in node.keywords
                                                          if k.arg == "mode")]
                     if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            os_open = (name == "open" and isinstance(node.func, ast.Attribute)
                       and isinstance(node.func.value, ast.Name) and node.func.value.id == "os")
            flags = ast.get_source_segment(text, node.args[1]) if os_open and len(
                node.args) > 1 else ""
            writes = (name in ("write_text", "write_bytes", "FileHandler")
                      or (name in ("open", "fdopen") and not os_open
                          and any(c in m for m in modes for c in "wax+"))
                      or (os_open and any(f in (flags or "") for f in (
                          "O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "flags"))))
            if writes:
                found.add(str(path.relative_to(SRC)))
    return found


def test_every_write_site_is_accounted_for() -> None:
    sites = _write_sites()
    unknown = {s for s in sites if s not in WRITE_SITES
               and not any(s.endswith(k) for k in WRITE_SITES)}
    assert not unknown, f"new places that write files: {sorted(unknown)} (add them to " \
                        "WRITE_SITES with why no key can reach them, or filter them)"


async def test_an_mcp_server_printing_its_token_logs_it_redacted(tmp_path: Path) -> None:
    """The observed failure: a passed token in clear in logs/mcp-NAME.log."""
    import sys

    from mcp import Client, StdioServerParameters

    from tuiapp.mcp.stdio_transport import stdio_transport

    token = "ghp_" + "Xy7Qw2Er9Tz4Ui1Op8As3Df6Gh5Jk0Lm"
    secrets.note_passed({"GITHUB_PERSONAL_ACCESS_TOKEN": token})
    script = ("import os, sys, time\nt = os.environ['GITHUB_PERSONAL_ACCESS_TOKEN']\n"
              "sys.stderr.write('auth with ' + t[:9]); sys.stderr.flush(); time.sleep(0.2)\n"
              "sys.stderr.write(t[9:] + ' hex ' + t.encode().hex() + '\\n'); sys.stderr.flush()\n")
    params = StdioServerParameters(command=sys.executable, args=["-c", script],
                                   env={"GITHUB_PERSONAL_ACCESS_TOKEN": token})
    path = tmp_path / "logs" / "mcp-gh.log"
    log = LogFile(path, secrets.active)
    with pytest.raises(Exception):  # noqa: B017 - it exits instead of answering
        async with Client(stdio_transport(params, errlog=log), mode="legacy",
                          read_timeout_seconds=5):
            pass
    log.close()
    text = path.read_bytes()
    assert b"auth with [redacted GITHUB_PERSONAL_ACCESS_TOKEN]" in text
    assert leaked(text, token) == []
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_readfile_at_an_offset_leaks_no_piece_of_the_key(tmp_path: Path) -> None:
    """The observed failure: readfile (allowed unasked) with offset=16 returned the key minus
    its first character, and it reached the provider, sessions.db and the spool."""
    import subprocess

    from conftest import KEP, kep_env

    project = tmp_path / "proj"
    (project / "prompts" / "functions").mkdir(parents=True)
    (project / ".env").write_text(f"OPENAI_API_KEY={KEY}\n")
    script = [
        {"tool_calls": [{"name": "readfile", "arguments": {"filename": ".env", "offset": 16}}]},
        {"tool_calls": [{"name": "readfile", "arguments": {"filename": ".env", "offset": 0,
                                                            "length": 28}}]},
        {"text": "done"},
    ]
    with FakeLLMServer(script) as server:
        (project / "kep.toml").write_text(
            'model = "fake/m"\n[providers.fake]\n'
            f'api = "chat"\nbase_url = "{server.base_url}"\napi_key_env = "FAKE_LLM_KEY"\n')
        env = kep_env(FAKE_LLM_KEY="fake-provider-key-0123456789")
        res = subprocess.run([*KEP, "run", "--yes", "--project", str(project), "read it"],
                             cwd=project, env=env, capture_output=True, text=True, timeout=120)
        # (readfile refuses `.env` outright now: a failed call, kep run exits 1)
        assert res.returncode in (0, 1) and "Traceback" not in res.stderr, res.stderr
        requests = [json.dumps(r.body) for r in server.requests]
    assert len(requests) == 3
    assert "[redacted OPENAI_API_KEY]" in requests[1] or "it holds keys" in requests[1]
    stored = [p.read_bytes() for p in Path(env["KEP_DATA_DIR"]).rglob("*") if p.is_file()]
    for data in [*requests, res.stdout, res.stderr, *stored]:
        assert leaked(data) == []
