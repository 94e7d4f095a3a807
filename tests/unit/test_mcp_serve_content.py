"""`kep mcp serve` serves the project's `.prompt` files as MCP prompts (their variables as
arguments) and, only with --resources, its files as resources, through the one project-file
reader: no `.env`, no hidden path, nothing outside the root, no FIFO, nothing huge, secrets
filtered. The client is the mcp SDK's own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import KEP, kep_env
from mcp import Client, StdioServerParameters
from mcp import types as mt
from mcp.shared.exceptions import MCPError

# End to end through real kep processes and MCP servers: run by `.ci/run` (-m slow).
pytestmark = pytest.mark.slow

SECRET = "sk-live-abcdefghijklmnop0123456789"
GREETING = """.prompt {"name": "greet", "params": {"tone": "warm"}}
.system You are a <<tone>> assistant.
.user Say hello to <<who>>.
.assistant Hello <<who>>!
.cmd readfile(filename="notes.txt")
"""


def params(root: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=KEP[0], args=[*KEP[1:], "mcp", "serve", "--project",
                                                       str(root), *extra], env=kep_env())


@pytest.fixture
def content(project: Path, tmp_path: Path) -> Path:
    (project / "kep.toml").write_text('[tools]\nbuiltins = false\n')
    prompts = project / "prompts"
    (prompts / "greet.prompt").write_text(GREETING)
    (prompts / "evil.prompt").write_text(
        '.prompt {"name": "evil\\u001b]0;pwned\\u0007[bold]x", "params": {}}\n.user hi\n')
    (prompts / "badvar.prompt").write_text(
        '.prompt {"name": "badvar", "params": {"a\\u001b[2Jb": 1}}\n.user <<who>>\n')
    (prompts / "[red]markup.prompt").write_text(".user plain <<x>>\n")
    (project / "notes.txt").write_text(f"notes\nkey={SECRET}\n")
    (project / "src").mkdir()
    (project / "src" / "main.py").write_text("print('hi')\n")
    (project / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\xff\x00" * 100)
    (project / "secret.bin").write_bytes(b"\xff\xfe" + SECRET.encode() + b"\xff")
    (project / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("[core]\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("outside the root\n")
    (project / "link_out.txt").symlink_to(outside)
    (project / "link_env").symlink_to(project / ".env")
    os.mkfifo(project / "pipe")
    with (project / "huge.bin").open("wb") as f:  # sparse: 2 GB of nothing on disk
        f.truncate(2 * 1024 ** 3)
    return project


def _text(result: mt.ReadResourceResult) -> str:
    return "".join(c.text for c in result.contents if isinstance(c, mt.TextResourceContents))


async def test_prompts_are_served_with_their_variables_as_arguments(content: Path) -> None:
    async with Client(params(content), cache=None) as client:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
        assert "greet" in listed
        args = {a.name: a.required for a in listed["greet"].arguments or []}
        assert args == {"tone": False, "who": True}
        got = await client.get_prompt("greet", {"who": "Ada"})
        texts = [(m.role, m.content.text) for m in got.messages
                 if isinstance(m.content, mt.TextContent)]
        assert ("assistant", "Hello Ada!") in texts
        assert any(role == "user" and "warm assistant" in t for role, t in texts)
        assert any(role == "user" and "Say hello to Ada." in t for role, t in texts)
        # `.cmd` runs tools: a prompt fetched by a client runs nothing.
        assert not any("notes" in t for _, t in texts)
        with pytest.raises(MCPError, match="who"):
            await client.get_prompt("greet", {})
        with pytest.raises(MCPError):
            await client.get_prompt("no-such-prompt", {})


async def test_hostile_prompt_names_and_variables_are_not_served(content: Path) -> None:
    async with Client(params(content), cache=None) as client:
        names = [p.name for p in (await client.list_prompts()).prompts]
        for p in (await client.list_prompts()).prompts:
            for text in [p.name, p.description or "", *(a.name for a in p.arguments or [])]:
                assert "\x1b" not in text and "\x07" not in text
        assert not any("evil" in n for n in names)
        assert "badvar" not in names
        # A name with markup is data, served as it is (nothing of kep's renders it).
        assert "[red]markup" in names


async def test_resources_are_off_without_the_flag(content: Path) -> None:
    async with Client(params(content), cache=None) as client:
        with pytest.raises(MCPError):
            await client.list_resources()
        with pytest.raises(MCPError):
            await client.read_resource((content / "notes.txt").as_uri())


async def test_resources_serve_project_files_and_nothing_else(content: Path) -> None:
    async with Client(params(content, "--resources"), cache=None) as client:
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        rel = {u.removeprefix(content.resolve().as_uri() + "/") for u in uris}
        assert {"notes.txt", "src/main.py", "blob.bin"} <= rel
        for hidden in (".env", ".git/config", "link_out.txt", "link_env", "pipe", "huge.bin"):
            assert hidden not in rel, hidden
        notes = await client.read_resource((content / "notes.txt").as_uri())
        assert "notes" in _text(notes) and SECRET not in _text(notes)
        blob = await client.read_resource((content / "blob.bin").as_uri())
        assert any(isinstance(c, mt.BlobResourceContents) for c in blob.contents)

        refused = [
            (content / ".env").as_uri(),
            (content / ".git" / "config").as_uri(),
            content.resolve().as_uri() + "/src/../.env",
            content.resolve().as_uri() + "/../outside.txt",
            (content / "link_out.txt").as_uri(),
            (content / "link_env").as_uri(),
            (content / "pipe").as_uri(),
            (content / "huge.bin").as_uri(),
            (content / "secret.bin").as_uri(),  # binary: can't be redacted, so not served
            "file:///etc/passwd",
            "file://evil.example/etc/passwd",
            "http://127.0.0.1/notes.txt",
            content.resolve().as_uri() + "/notes.txt%00.png",
            content.resolve().as_uri() + "/no-such-file",
        ]
        for uri in refused:
            with pytest.raises(MCPError) as e:
                await client.read_resource(uri)
            assert SECRET not in str(e.value) and "outside the root" not in str(e.value)
        # Still serving after all that.
        assert "notes" in _text(await client.read_resource((content / "notes.txt").as_uri()))


async def test_many_files_are_listed_in_pages_and_capped(project: Path) -> None:
    (project / "kep.toml").write_text('[tools]\nbuiltins = false\n')
    many = project / "many"
    many.mkdir()
    for i in range(1200):
        (many / f"f{i:04}.txt").write_text("x")
    (many / "tab\tand\nnewline.txt").write_text("odd name")  # not listed: not printable
    async with Client(params(project, "--resources"), cache=None) as client:
        seen: list[str] = []
        cursor: str | None = None
        pages = 0
        while True:
            page = await client.list_resources(cursor=cursor)
            pages += 1
            seen += [str(r.uri) for r in page.resources]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert pages >= 3 and len(seen) == len(set(seen))
        assert sum("/many/f" in u for u in seen) == 1200
        assert not any("newline" in u for u in seen)
