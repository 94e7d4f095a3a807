"""The documentation says what exists, and everything that exists is documented: every key
(read from the bindings), command (from the argparse parser), config key (from what the
config parser asks for) and palette entry (from the palette's provider), both ways. Plus the
README front page: small, and every link into the topics resolves."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import KEP, REPO, kep_env

from tuiapp import cli, docs
from tuiapp.settings import config, config_reader

DOCS = REPO / "tuiapp" / "docs"
README = REPO / "README.md"


def page(name: str) -> str:
    return (DOCS / f"{name}.md").read_text(encoding="utf-8")


# ---- keys ------------------------------------------------------------------------------

def bound_keys() -> dict[str, str]:
    """Every key bound in kep's widgets and screens → where."""
    from tuiapp.ui.app import KepApp
    from tuiapp.ui.chat_screen import ChatScreen
    from tuiapp.ui.screens.help import HelpScreen
    from tuiapp.ui.screens.output_viewer import OutputViewer
    from tuiapp.ui.screens.session_picker import SessionPicker
    from tuiapp.ui.widgets.approval import ApprovalPanel
    from tuiapp.ui.widgets.approval_keys import BUTTONS
    from tuiapp.ui.widgets.functions_panel import FunctionsPanel
    from tuiapp.ui.widgets.prompt_input import PromptInput
    from tuiapp.ui.widgets.tool_panes import ToolPanes

    out = {}
    for owner in (KepApp, ChatScreen, PromptInput, FunctionsPanel, ToolPanes, ApprovalPanel,
                  OutputViewer, SessionPicker, HelpScreen):
        for binding in owner.BINDINGS:
            for key in binding.key.split(","):  # type: ignore[union-attr]
                out[key.strip()] = owner.__name__
    for key, *_ in BUTTONS:  # the approval's answer keys (handled in its on_key)
        out[key] = "ApprovalPanel"
    return out


# Keys handled outside any BINDINGS: (documented as, handled by).
UNBOUND = {"Enter": "PromptInput._on_key, lists", "Shift+Enter": "PromptInput._on_key",
           "Ctrl+J": "PromptInput._on_key", "↑": "PromptInput.action_cursor_up",
           "↓": "PromptInput.action_cursor_down", "Tab": "Textual focus",
           "Shift+Tab": "Textual focus", "Ctrl+C": "Textual copy", "Ctrl+Q": "Textual quit",
           "Ctrl+P": "Textual palette", "1": "starters", "9": "starters", "←": "tabs",
           "→": "tabs", "/help": "ui/slash/builtins.py", "!": "ui/slash/dispatch.py",
           "Ctrl+X": "PromptInput._editor_keys", "Ctrl+E": "PromptInput._editor_keys"}

SHOWN = {"escape": "Esc", "slash": "/", "enter": "Enter", "pagedown": "PageDown",
         "pageup": "PageUp"}


def shown(key: str) -> str:
    if key in SHOWN:
        return SHOWN[key]
    if key.startswith(("ctrl+", "alt+", "f")) and len(key) > 1:
        return "+".join(part.capitalize() if len(part) > 1 else part.upper()
                        for part in key.split("+"))
    return key


def documented_keys() -> set[str]:
    """Backticked keys in the first column of the key tables of keys.md and chat.md."""
    keys = set()
    for name in ("keys", "chat"):
        for line in page(name).splitlines():
            if line.startswith("| `"):
                first = line.split("|")[1]
                keys.update(re.findall(r"`([^`]+)`", first))
    return keys


def test_every_bound_key_is_documented() -> None:
    documented = documented_keys()
    missing = {shown(k): where for k, where in bound_keys().items()
               if shown(k) not in documented and k not in ("ctrl+enter",)}
    assert not missing, f"keys bound but not in tuiapp/docs/keys.md: {missing}"


def test_every_documented_key_exists() -> None:
    real = {shown(k) for k in bound_keys()} | set(UNBOUND)
    for doc in documented_keys():
        parts = ([doc] if doc.startswith("/") else
                 [p for p in re.split(r"\s*(?:/|,|–)\s*|\s+", doc) if p])
        for part in parts:
            assert part in real or part == "mouse", f"documented key {doc!r} is not bound"


def test_the_key_table_says_edited_arguments_are_decided_again() -> None:
    row = next(line for line in page("keys").splitlines() if line.startswith("| `e` |"))
    assert "decided again" in row and "runs with them" not in row


def table_rows(page_name: str, heading: str) -> list[list[str]]:
    """The cells of the first table under `heading` in a topic page."""
    text = page(page_name)
    section = text[text.index(heading):]
    rows, started = [], False
    for line in section.splitlines():
        if line.startswith("|"):
            started = True
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not set(cells[0]) <= set("-") and cells[0] not in ("Command", "Action"):
                rows.append(cells)
        elif started:
            break
    return rows


def test_every_slash_command_is_documented_and_every_documented_one_exists() -> None:
    from tuiapp.ui.slash.builtins import BUILTINS

    rows = table_rows("keys", "## Slash commands")
    documented = {row[0].split()[0].lstrip("/"): row[0] for row in rows}
    assert set(documented) == set(BUILTINS)
    for name, cell in documented.items():  # with the arguments it takes
        assert cell == f"/{name} {BUILTINS[name].usage}".strip()


def test_every_key_action_is_documented_and_every_binding_has_one() -> None:
    from tuiapp.ui.keys import ACTIONS

    rows = table_rows("keys", "## Your keys")
    assert [row[0] for row in rows] == list(ACTIONS)
    for row in rows:
        assert re.findall(r"`([^`]+)`", row[1]) == ACTIONS[row[0]].default.split(",")
    # Every Textual binding of kep's is one of them, by id, with that default.
    from tuiapp.ui.widgets.approval_keys import BUTTONS, KEY_NAMES

    owners = bound_owners()
    for owner in owners:
        for binding in owner.BINDINGS:
            assert binding.id in ACTIONS, f"{owner.__name__} {binding.key} has no [keys] name"
            assert ACTIONS[binding.id].default == binding.key
    for key, _, action, _ in BUTTONS:
        assert ACTIONS[KEY_NAMES[action]].default == key


def bound_owners() -> list[Any]:
    from tuiapp.ui.app import KepApp
    from tuiapp.ui.chat_screen import ChatScreen
    from tuiapp.ui.screens.grants_review import GrantsReview
    from tuiapp.ui.screens.help import HelpScreen
    from tuiapp.ui.screens.new_function import NewFunction
    from tuiapp.ui.screens.output_viewer import OutputViewer
    from tuiapp.ui.screens.rules import RulesScreen
    from tuiapp.ui.screens.session_picker import SessionPicker
    from tuiapp.ui.screens.tool_editor import ToolEditor
    from tuiapp.ui.screens.trust import TrustScreen
    from tuiapp.ui.widgets.approval import ApprovalPanel
    from tuiapp.ui.widgets.functions_panel import FunctionsPanel
    from tuiapp.ui.widgets.prompt_input import PromptInput
    from tuiapp.ui.widgets.tool_panes import ToolPanes
    from tuiapp.ui.widgets.variables_form import VariablesForm

    return [KepApp, ChatScreen, PromptInput, FunctionsPanel, ToolPanes, ApprovalPanel,
            OutputViewer, SessionPicker, HelpScreen, RulesScreen, ToolEditor, GrantsReview,
            TrustScreen, NewFunction, VariablesForm, *mcp_screens()]


def mcp_screens() -> list[Any]:
    from tuiapp.ui.screens.elicitation import ElicitationScreen
    from tuiapp.ui.screens.resources import ResourcesScreen, TemplateScreen

    return [ElicitationScreen, ResourcesScreen, TemplateScreen]


# ---- commands --------------------------------------------------------------------------

def subcommands() -> set[str]:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return set(action.choices)  # type: ignore[arg-type]


def test_every_command_is_documented_and_every_documented_one_exists() -> None:
    text = page("commands")
    table = [line for line in text.splitlines() if line.startswith("| `kep")]
    documented = {m for line in table for m in re.findall(r"`kep ([a-z]+)", line)}
    assert subcommands() == documented
    assert set(cli.COMMANDS) == subcommands()
    readme = README.read_text(encoding="utf-8")
    for name in subcommands():
        assert f"`kep {name}" in readme, f"the README's command table misses kep {name}"


def test_kep_help_lists_and_shows_topics(tmp_path: Path) -> None:
    listing = subprocess.run([*KEP, "help"], capture_output=True, text=True, env=kep_env(),
                             timeout=60)
    assert listing.returncode == 0
    for topic, _ in docs.TOPICS:
        assert f"  {topic} " in listing.stdout
    keys = subprocess.run([*KEP, "help", "keys"], capture_output=True, text=True,
                          env=kep_env(), timeout=60)
    assert keys.returncode == 0 and keys.stdout == page("keys")
    hostile = subprocess.run([*KEP, "help", "\x1b]2;x\x07nothing\tlike this"],
                             capture_output=True, text=True, env=kep_env(), timeout=60)
    assert hostile.returncode == 2 and "\x1b" not in hostile.stderr
    assert len(hostile.stderr.strip().splitlines()) == 1


# ---- config keys -----------------------------------------------------------------------

FULL = {
    "model": "offline", "theme": "dark", "max_steps": 3, "system_prompt": "x",
    "providers": {"p": {"api": "chat", "base_url": "http://127.0.0.1/v1",
                        "prices": {"input": 1, "output": 2},
                        "models": {"m": {"prices": {"input": 1, "output": 2}}}}},
    "approval": {"rules": [{"tool": "x", "action": "allow"}]},
    "tools": {"sources": [{"format": "aitool", "path": "x"}], "timeouts": {"t": 3}},
    "mcp": {"servers": {"s": {"command": "x"}}},
    "ui": {},
}


def config_keys_in_code(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    asked: set[str] = set()
    get = config_reader.TableReader.get

    def recording(self: Any, key: str, *args: Any, **kwargs: Any) -> Any:
        asked.add(self.prefix + key)
        return get(self, key, *args, **kwargs)

    monkeypatch.setattr(config_reader.TableReader, "get", recording)
    config.parse(FULL, "kep.toml", REPO)
    return {normal(k) for k in asked}


def normal(key: str) -> str:
    key = re.sub(r"\[\d+\]", "", key)
    key = re.sub(r"^providers\.[^.]+", "providers.NAME", key)
    key = re.sub(r"\.models\.[^.]+", ".models.NAME", key)
    key = re.sub(r"^mcp\.servers\.[^.]+", "mcp.servers.NAME", key)
    key = re.sub(r"\.prices\.[a-z_]+$", ".prices", key)
    return key


def config_keys_documented() -> set[str]:
    keys = set()
    for block in re.findall(r"```toml\n(.*?)```", page("config"), re.S):
        table = ""
        for line in block.splitlines():
            line = line.strip().lstrip("# ").strip()
            if m := re.match(r"^\[\[?([^\]]+)\]\]?", line):
                table = m.group(1)
                table = normal(re.sub(r'"[^"]*"', "NAME", table) + ".x")[:-2]
                keys.add(table)
            elif m := re.match(r"^([a-z_]+)\s*=", line):
                keys.add(normal(f"{table}.{m.group(1)}" if table else m.group(1)))
    return keys


def test_every_config_key_is_documented_and_every_documented_one_exists(
        monkeypatch: pytest.MonkeyPatch) -> None:
    code = config_keys_in_code(monkeypatch)
    documented = config_keys_documented()
    documented |= {k.rsplit(".", i)[0] for k in documented for i in range(1, k.count(".") + 1)}
    tables = {k.rsplit(".", 1)[0] for k in code if "." in k}
    # tools.timeouts holds tool names, not keys of kep's
    undocumented = {k for k in code if k not in documented}
    assert not undocumented, f"config keys not in tuiapp/docs/config.md: {undocumented}"
    unknown = {k for k in documented if k not in code and k not in tables
               and not k.startswith(("tools.timeouts.", "keys."))}  # (keys: action names)
    assert not unknown, f"documented config keys kep does not read: {unknown}"


def test_the_config_page_says_comments_are_kept() -> None:
    assert "Comments in a file kep rewrites are not kept" not in page("config")


# ---- palette ---------------------------------------------------------------------------

def palette_titles() -> set[str]:
    from tuiapp.ui import commands

    app = SimpleNamespace(__getattr__=None)
    fake = type("Fake", (), {"__getattr__": lambda self, name: (lambda *a, **k: None)})()
    fake.ws = SimpleNamespace(config=config.parse({}, "kep.toml", REPO), mcp=None, mode="ask")
    del app
    titles = set()
    try:
        for entry in commands.kep_commands(fake):
            titles.add(entry.title)
    except Exception:  # entries that need a running app come after the fixed ones
        pass
    return titles


def documented_palette() -> set[str]:
    text = page("keys")
    section = text[text.index("Command palette"):]
    rows = [line.split("|")[1].strip() for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| Entry") and "---" not in line]
    out = set()
    for row in rows:
        out.update(part.strip() for part in row.split(" / "))
        out.update(part.strip() for part in row.split(", "))
    return out


def test_every_palette_entry_is_documented_and_every_documented_one_exists() -> None:
    real = palette_titles()
    assert {"Switch model", "Help", "Retry"} <= real
    documented = documented_palette()
    assert not real - documented, f"palette entries not documented: {real - documented}"
    textual = {"Keys", "Screenshot", "Quit", "Keys, Screenshot, Quit"}
    dynamic = {"MCP: restart NAME", "MCP: log in NAME", "MCP: resources", "Trust this folder",
               "Prompt: NAME", "Agent: NAME", "Prompt: NAME / Agent: NAME",
               "Toggle tool panes / Toggle functions panel"}
    extra = {d for d in documented - real - textual - dynamic if d}
    assert not extra, f"documented palette entries that do not exist: {extra}"
    assert "Save screenshot" not in page("keys")


# ---- the front page --------------------------------------------------------------------

def test_the_readme_is_a_front_page_and_its_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) <= 25 * 1024
    assert "Python 3.11" in text and "--project" in text and ".venv/bin" in text
    for word in ("luna", "handshake"):
        assert word not in text.lower()
        for topic, _ in docs.TOPICS:
            assert word not in page(topic).lower(), f"{word!r} in {topic}.md"
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        assert (REPO / target).exists(), target
    for topic, _ in docs.TOPICS:
        assert f"tuiapp/docs/{topic}.md" in text, f"the topics table misses {topic}"


def test_ci_runs_the_readmes_two_commands_nothing_weaker() -> None:
    """The README's set-up commands are exactly two, and `.ci/run` installs as the second
    does and runs its pytest command as is (then the slow tests)."""
    def commands(text: str) -> list[str]:
        blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
        return [line for block in blocks for line in block.splitlines()
                if line.startswith("python3 -m venv")]

    readme = commands(README.read_text(encoding="utf-8"))
    assert len(readme) == 2, readme
    assert commands(page("overview")) == readme  # `kep help overview` says the same
    assert "kep --model offline" in readme[0]
    *install, run = readme[1].split(" && ")
    assert run == ".venv/bin/python -m pytest" and "'.[test]'" in install[-1]
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    assert " && ".join(install) in ci
    assert f"{run} || status=$?" in ci and f"{run} -m slow || status=$?" in ci


def test_links_between_topics_resolve() -> None:
    anchors: dict[str, set[str]] = {}
    for topic, _ in docs.TOPICS:
        heads = re.findall(r"^#+ (.+)$", page(topic), re.M)
        anchors[topic] = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                          for h in heads}
    for topic, _ in docs.TOPICS:
        for target, anchor in re.findall(r"\]\(([a-z\-]*\.md)?#([^)]+)\)", page(topic)):
            other = target[:-3] if target else topic
            assert anchor in anchors[other], f"{topic}.md links to {target}#{anchor}"
        for target in re.findall(r"\]\(([^)#:]+)\)", page(topic)):
            assert (DOCS / target).resolve().exists(), f"{topic}.md links to {target}"
