"""What a `.prompt` includes and an agent's documents stay inside the project and never carry a
key: `.include .env`, `.include ~/.ssh/id_rsa`, `.include ../..`, `documents: [../../.env]`
are refused with a line saying why, and nothing of them reaches the request.

The decision: refused outright, never asked. A prompt or an agent is text a checkout ships;
asking "may this prompt read ~/.ssh/id_rsa?" invites a yes the user cannot judge, and a file
really wanted can be copied into the project."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from test_prompt_file import TOOLS, Scripted, echo_executor

from tuiapp.conversation import agent as agent_mod
from tuiapp.conversation import agent_model
from tuiapp.conversation.conversation import Conversation, allow_all
from tuiapp.conversation.prompt_file import parse
from tuiapp.conversation.prompt_model import PromptError
from tuiapp.conversation.prompt_run import PromptRun
from tuiapp.settings.config_types import ApprovalConfig
from tuiapp.vocab.events import Event

KEY = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "proj"
    (r / "prompts").mkdir(parents=True)
    (r / ".env").write_text(f"OPENAI_API_KEY={KEY}\n")
    (r / "notes.md").write_text("project notes\n")
    (tmp_path / "outside.txt").write_text(f"outside {KEY}\n")
    ssh = Path(os.path.expanduser("~/.ssh"))
    ssh.mkdir(exist_ok=True)
    (ssh / "id_rsa").write_text(f"PRIVATE {KEY}\n")
    return r


def run_in(root: Path, text: str) -> tuple[Scripted, list[Event]]:
    pf = parse(text, root / "prompts" / "t.prompt")
    run = PromptRun(pf, root, lambda: TOOLS, {})
    provider = Scripted(["ok"])
    events: list[Event] = []
    conv = Conversation(provider, lambda: TOOLS, lambda: ApprovalConfig("allow"), allow_all,
                        echo_executor, events.append, system=run.system_text,
                        allow_only=run.allow_only)
    asyncio.run(run.run(conv))
    return provider, events


def sent(provider: Scripted) -> str:
    return "\n".join(m.content for req in provider.requests for m in req[0] if m.content)


def test_an_include_inside_the_root_is_sent(root: Path) -> None:
    provider, _ = run_in(root, ".user\nread:\n.include notes.md\n.exec\n")
    assert "project notes" in sent(provider)


@pytest.mark.parametrize("target,says", [
    (".env", "hidden"), ("./prompts/../.env", "hidden"), ("~/.ssh/id_rsa", "outside the project"),
    ("../outside.txt", "outside the project"), ("../..", "outside the project"),
    ("link-to-env", "hidden"), ("link-out", "outside the project"),
])
def test_an_include_of_a_secret_or_outside_is_refused_with_the_reason(
        root: Path, target: str, says: str) -> None:
    (root / "link-to-env").symlink_to(root / ".env")
    (root / "link-out").symlink_to(root.parent / "outside.txt")
    with pytest.raises(PromptError) as e:
        run_in(root, f".user\nread:\n.include {target}\n.exec\n")
    assert says in str(e.value).splitlines()[0]  # (the second line quotes the statement)
    assert KEY not in str(e.value)


def test_a_glob_include_skips_dotenv_and_says_so(root: Path) -> None:
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("doc a\n")
    (root / "docs" / ".env").write_text(f"K={KEY}\n")
    provider, _ = run_in(root, ".user\nread:\n.include docs/.*\n.include docs/*.md\n.exec\n")
    assert KEY not in sent(provider) and "doc a" in sent(provider)


def test_an_include_link_swapped_to_dotenv_after_the_check_is_not_read(root: Path) -> None:
    from tuiapp.conversation import prompt_statements

    (root / "swap.md").write_text("fine\n")
    original = prompt_statements.project_files.confined

    def check_then_swap(path: Path, r: Path) -> Path:
        out = original(path, r)
        if path.name == "swap.md" and not path.is_symlink():
            path.unlink()
            path.symlink_to(root / ".env")
        return out

    prompt_statements.project_files.confined = check_then_swap  # type: ignore[assignment]
    try:
        with pytest.raises(PromptError):
            run_in(root, ".user\nread:\n.include swap.md\n.exec\n")
    finally:
        prompt_statements.project_files.confined = original  # type: ignore[assignment]


# ---- agent documents -------------------------------------------------------------------------


def _agent(root: Path, documents: str) -> agent_model.Agent:
    d = root / "agents" / "spy"
    d.mkdir(parents=True, exist_ok=True)
    (d / "index.yaml").write_text(f"name: Spy\ninstructions: x\ndocuments: {documents}\n")
    (d / "guide.md").write_text("the guide\n")
    return agent_mod.load_agent(d)


@pytest.mark.parametrize("entry,says", [
    ("../../.env", "hidden"), ("~/.ssh/id_rsa", "outside the project"),
    ("../../../outside.txt", "outside the project"),
])
def test_an_agent_document_that_is_a_secret_or_outside_is_refused(
        root: Path, entry: str, says: str) -> None:
    docs = agent_mod.read_documents(_agent(root, f"[guide.md, '{entry}']"), root)
    assert KEY not in docs.text and "the guide" in docs.text
    assert any(entry in n and says in n for n in docs.notices), docs.notices


def test_a_glob_of_agent_documents_never_takes_dotenv(root: Path) -> None:
    docs = agent_mod.read_documents(_agent(root, "['../../.*', '../../*.md']"), root)
    assert KEY not in docs.text and "project notes" in docs.text
