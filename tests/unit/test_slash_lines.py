"""What a prompt line starting `/` or `!` means, user commands from `.prompt` files, and
their arguments (tuiapp/project/slash.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tuiapp.project import slash
from tuiapp.settings import paths


def test_lines_are_told_apart() -> None:
    assert slash.parse("hello") == slash.Line("text", "hello")
    assert slash.parse("//etc/passwd is what?") == slash.Line("text", "/etc/passwd is what?")
    assert slash.parse("!!important") == slash.Line("text", "!important")
    assert slash.parse("/model gpt") == slash.Line("command", name="model", args="gpt")
    assert slash.parse("/help") == slash.Line("command", name="help", args="")
    assert slash.parse("!ls -la") == slash.Line("shell", "ls -la")
    # A tab or a newline ends the name as a space does.
    assert slash.parse("/loud\tnotes.txt") == slash.Line("command", name="loud", args="notes.txt")
    assert slash.parse("/loud\nline two") == slash.Line("command", name="loud", args="line two")
    assert slash.parse(" /model").kind == "text"  # only a line that starts with it


PARAMS = (slash.Param("file"), slash.Param("focus", default="all"))


def test_arguments_fill_variables() -> None:
    assert slash.bind("", PARAMS) == {}
    assert slash.bind("a.py", PARAMS) == {"file": "a.py"}
    assert slash.bind("focus=errors a.py", PARAMS) == {"focus": "errors", "file": "a.py"}
    # the last variable takes the rest of the line
    assert slash.bind("a.py error handling", PARAMS) == {"file": "a.py",
                                                         "focus": "error handling"}
    # tabs and newlines separate words; quotes keep them
    assert slash.bind("a.py\tb", PARAMS) == {"file": "a.py", "focus": "b"}
    assert slash.bind("'x\ty\nz'", PARAMS) == {"file": "x\ty\nz"}


@pytest.mark.parametrize("args, why", [("'unclosed", "cannot read"),
                                       ("x", "no arguments")])
def test_bad_arguments_are_one_line(args: str, why: str) -> None:
    with pytest.raises(slash.SlashError) as e:
        slash.bind(args, ())
    assert why in str(e.value) and "\n" not in str(e.value)


def test_mcp_prompts_take_named_arguments() -> None:
    assert slash.bind("city=Paris", (), free=True) == {"city": "Paris"}
    with pytest.raises(slash.SlashError):
        slash.bind("Paris", (), free=True)


def workspace(root: Path, prompts: dict[str, str]) -> SimpleNamespace:
    (root / "prompts").mkdir(parents=True, exist_ok=True)
    for name, text in prompts.items():
        (root / "prompts" / f"{name}.prompt").write_text(text)
    return SimpleNamespace(root=root, mcp=None)


def test_every_prompt_file_is_a_command_and_a_builtin_name_is_shadowed(tmp_path: Path) -> None:
    ws = workspace(tmp_path, {
        "review": '.prompt {"name": "review", "params": {"focus": "all"}}\n'
                  ".user Review <<file>> for <<focus>>\n",
        "model": ".user I shadow /model\n",
        "broken": ".prompt {not json\n",
    })
    user = paths.config_dir() / "prompts"
    user.mkdir(parents=True, exist_ok=True)
    (user / "mine.prompt").write_text(".user from the user folder\n")
    (user / "review.prompt").write_text(".user a second review: the project's wins\n")
    cmds = {c.name: c for c in slash.user_commands(ws, {"model", "help"})}  # type: ignore[arg-type]
    assert set(cmds) == {"review", "model", "broken", "mine"}
    assert cmds["model"].shadowed and not cmds["review"].shadowed
    assert [p.name for p in cmds["review"].params] == ["focus", "file"]
    assert cmds["review"].usage == "[focus] file"
    assert cmds["broken"].description.startswith("broken:")
    assert cmds["mine"].source == "user prompt" and Path(cmds["mine"].ref).is_absolute()
    assert cmds["mine"].description == "from the user folder"


def test_two_hundred_prompt_files(tmp_path: Path) -> None:
    ws = workspace(tmp_path, {f"p{i:03}": f".user number {i} <<x>>\n" for i in range(200)})
    cmds = slash.user_commands(ws, ())  # type: ignore[arg-type]
    assert len(cmds) == 200 and cmds[0].name == "p000" and cmds[0].usage == "x"


def test_mcp_prompts_are_commands_and_can_be_shadowed(tmp_path: Path) -> None:
    ws = workspace(tmp_path, {"weather": ".user from a file\n"})
    states = {"srv": SimpleNamespace(prompts=("weather", "forecast", "help", "x\x1b[2Jy"))}
    ws.mcp = SimpleNamespace(states=lambda: states)
    cmds = {c.name: c for c in slash.user_commands(ws, {"help"})}  # type: ignore[arg-type]
    assert cmds["weather"].source == "prompt"  # the project's file came first
    assert cmds["forecast"].ref == "mcp:srv/forecast" and cmds["forecast"].source == "mcp"
    assert cmds["help"].shadowed
    assert "x\x1b[2Jy" in cmds  # kept as named; the list shows it through the display edge
