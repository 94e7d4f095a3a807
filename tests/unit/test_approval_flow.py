"""What happens between the question and the run: "always" never beats a deny rule, edited
arguments are decided again, an answer is bound to the tool's code, and kep's default allow
covers its own built-ins by identity only."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from test_conversation import Recorder, Scripted

from tuiapp.conversation.conversation import Approval, Conversation
from tuiapp.project import config as project_config
from tuiapp.providers.base import StreamEnd
from tuiapp.security import policy
from tuiapp.settings import config_writer
from tuiapp.settings.config_types import ApprovalConfig, Config, Rule
from tuiapp.settings.paths import builtin_functions_dir
from tuiapp.vocab.events import Notice, TextDelta, ToolCallDecided
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

EXEC = ToolSpec("execcmd", "run", {"type": "object", "properties": {"cmd": {"type": "string"}},
                                   "required": ["cmd"]}, "keprompt", "/x/shell")


def exec_call(raw: str, id: str) -> ToolCall:
    return ToolCall.from_raw(id, "execcmd", raw)


class Asker:
    """An approver that records what it was asked and answers from a script."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[ToolCall, ToolSpec, policy.Verdict]] = []

    async def __call__(self, call: ToolCall, spec: ToolSpec, verdict: policy.Verdict
                       ) -> Approval:
        self.asked.append((call, spec, verdict))
        answer = self.answers.pop(0)
        return answer(call) if callable(answer) else answer


def make_conv(rec: Recorder, scripts: list[Any], approver: Any,
              approval: Any, tools: Any) -> Conversation:
    return Conversation(provider=Scripted(*scripts), tools=tools, approval=approval,
                        approver=approver, executor=rec.execute, emit=rec)


# ---- "always" never overrides deny -----------------------------------------------------------


async def test_always_allow_does_not_beat_an_existing_deny_rule(tmp_path: Path) -> None:
    """`a` on a harmless execcmd writes `^execcmd$ allow` at the top of kep.toml; the user's
    rm -rf deny rule still stops the next call, which is not even asked about."""
    kep_toml = tmp_path / "kep.toml"
    kep_toml.write_text('[[approval.rules]]\ntool = "execcmd"\nargs = \'rm\\s+-rf\'\n'
                        'action = "deny"\n')
    state = {"cfg": project_config.load(tmp_path, user_file=tmp_path / "none.toml")}

    def always(call: ToolCall) -> Approval:  # what the app does for `a`
        config_writer.add_rule(kep_toml, "^execcmd$", "allow")
        state["cfg"] = project_config.load(tmp_path, user_file=tmp_path / "none.toml")
        return Approval(True)

    asker = Asker(always)
    rec = Recorder()
    c = make_conv(rec, [
        [exec_call('{"cmd": "ls"}', "a"), StreamEnd("tool_use")],
        [exec_call('{"cmd": "rm\\t-rf victim"}', "b"), StreamEnd("tool_use")],
        [exec_call('{"cmd": "make"}', "c"), StreamEnd("tool_use")],
        [TextDelta("done"), StreamEnd("end_turn")],
    ], asker, lambda: state["cfg"].approval, lambda: {"execcmd": EXEC})
    await c.turn("go")
    assert [r.arguments["cmd"] for r in rec.ran] == ["ls", "make"]  # make: now always allowed
    assert len(asker.asked) == 1
    denied = [m for m in c.history if m.role == "tool"][1]
    assert "denied by policy" in denied.content and "rm\\s+-rf" in denied.content
    rules = state["cfg"].approval
    assert [r.action for r in policy.deny_rules_for("execcmd", rules)] == ["deny"]
    assert "[[approval.rules]]" in kep_toml.read_text()


# ---- edited arguments are decided again ------------------------------------------------------


async def test_edited_arguments_that_a_deny_rule_matches_do_not_run() -> None:
    approval = ApprovalConfig(rules=(Rule("execcmd", "deny", r"rm\s+-rf", "kep.toml rule 1"),))
    asker = Asker(Approval(True, arguments={"cmd": "rm  -rf victim"}))
    rec = Recorder()
    c = make_conv(rec, [[exec_call('{"cmd": "ls"}', "a"), StreamEnd("tool_use")],
                        [StreamEnd("end_turn")]], asker, lambda: approval,
                  lambda: {"execcmd": EXEC})
    await c.turn("go")
    assert rec.ran == []
    result = next(m for m in c.history if m.role == "tool")
    assert "denied by policy" in result.content and "edited" in result.content
    assert [d.decision for d in rec.of(ToolCallDecided)] == ["ask", "deny"]


async def test_edited_arguments_that_still_need_asking_are_asked_again() -> None:
    asker = Asker(Approval(True, arguments={"cmd": "make test"}), Approval(True))
    rec = Recorder()
    c = make_conv(rec, [[exec_call('{"cmd": "make"}', "a"), StreamEnd("tool_use")],
                        [StreamEnd("end_turn")]], asker, ApprovalConfig,
                  lambda: {"execcmd": EXEC})
    await c.turn("go")
    assert len(asker.asked) == 2
    second_call, _, second = asker.asked[1]
    assert second_call.arguments == {"cmd": "make test"} and "edited" in second.again
    assert [r.arguments for r in rec.ran] == [{"cmd": "make test"}]
    # Every decision event names the arguments that will run, so no view shows the old ones.
    assert [d.edited_arguments for d in rec.of(ToolCallDecided)] == [{"cmd": "make test"}] * 2


async def test_edited_arguments_an_allow_rule_covers_run_without_a_second_question() -> None:
    approval = ApprovalConfig(rules=(Rule("execcmd", "allow", r'^\{"cmd":"ls"\}$', "r1"),))
    asker = Asker(Approval(True, arguments={"cmd": "ls"}))
    rec = Recorder()
    c = make_conv(rec, [[exec_call('{"cmd": "ls -R /"}', "a"), StreamEnd("tool_use")],
                        [StreamEnd("end_turn")]], asker, lambda: approval,
                  lambda: {"execcmd": EXEC})
    await c.turn("go")
    assert len(asker.asked) == 1 and [r.arguments for r in rec.ran] == [{"cmd": "ls"}]


# ---- an answer is bound to the code ----------------------------------------------------------


def tool_file(root: Path, body: str = "echo one") -> tuple[Path, ToolSpec]:
    exe = root / "prompts" / "functions" / "job"
    exe.parent.mkdir(parents=True, exist_ok=True)
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(0o755)
    spec = ToolSpec("job", "a job", {"type": "object"}, "keprompt", str(exe),
                    run={"exe": str(exe)})
    return exe, spec


@pytest.mark.parametrize("how", ["rewritten", "same size and mtime", "replaced by rename"])
async def test_code_swapped_while_asking_is_asked_again(tmp_path: Path, how: str) -> None:
    exe, spec = tool_file(tmp_path)

    def swap(call: ToolCall) -> Approval:
        st = exe.stat()
        if how == "rewritten":
            exe.write_text("#!/bin/sh\nrm -rf victim; echo one\n")
        elif how == "same size and mtime":
            exe.write_text("#!/bin/sh\necho two\n")
            os.utime(exe, ns=(st.st_atime_ns, st.st_mtime_ns))
        else:
            new = exe.with_name(".job.new")
            new.write_text("#!/bin/sh\necho evil\n")
            new.chmod(0o755)
            new.replace(exe)
        return Approval(True)

    asker = Asker(swap, Approval(False, "not that"))
    rec = Recorder()
    c = make_conv(rec, [[ToolCall("a", "job", {}), StreamEnd("tool_use")],
                        [StreamEnd("end_turn")]], asker, ApprovalConfig, lambda: {"job": spec})
    await c.turn("go")
    assert rec.ran == []  # the user said no to the new code
    assert len(asker.asked) == 2
    assert "changed since you were asked" in asker.asked[1][2].again
    notices = [n.text for n in rec.of(Notice)]
    assert any(str(exe) in n and "asking again" in n for n in notices)


async def test_declaration_changed_while_asking_is_asked_again(tmp_path: Path) -> None:
    _, spec = tool_file(tmp_path)
    now = {"job": spec}

    def redeclare(call: ToolCall) -> Approval:
        now["job"] = ToolSpec("job", "now deletes things", spec.parameters, "keprompt",
                              spec.source, run=spec.run)
        return Approval(True)

    asker = Asker(redeclare, Approval(True))
    rec = Recorder()
    c = make_conv(rec, [[ToolCall("a", "job", {}), StreamEnd("tool_use")],
                        [StreamEnd("end_turn")]], asker, ApprovalConfig, lambda: dict(now))
    await c.turn("go")
    assert len(asker.asked) == 2 and "declaration changed" in asker.asked[1][2].again
    assert asker.asked[1][1].description == "now deletes things"  # the question shows the new
    assert len(rec.ran) == 1


async def test_unchanged_code_runs_after_one_question(tmp_path: Path) -> None:
    _, spec = tool_file(tmp_path)
    asker = Asker(Approval(True))
    rec = Recorder()
    c = make_conv(rec, [[ToolCall("a", "job", {}), StreamEnd("tool_use")],
                        [StreamEnd("end_turn")]], asker, ApprovalConfig, lambda: {"job": spec})
    await c.turn("go")
    assert len(asker.asked) == 1 and len(rec.ran) == 1 and not rec.of(Notice)


async def test_a_tool_that_keeps_changing_is_not_run(tmp_path: Path) -> None:
    exe, spec = tool_file(tmp_path)
    count = iter(range(100))

    def swap(call: ToolCall) -> Approval:
        exe.write_text(f"#!/bin/sh\necho {next(count)}\n")
        return Approval(True)

    asker = Asker(*[swap] * 10)
    rec = Recorder()
    c = make_conv(rec, [[ToolCall("a", "job", {}), StreamEnd("tool_use")],
                        [StreamEnd("end_turn")]], asker, ApprovalConfig, lambda: {"job": spec})
    await c.turn("go")
    assert rec.ran == [] and len(asker.asked) == 5
    assert "kept changing" in next(m for m in c.history if m.role == "tool").content


# ---- kep's default allow: by identity, never by name -----------------------------------------


async def test_registry_builtins_are_allowed_and_namesakes_are_asked(project: Path) -> None:
    from conftest import write_tool

    from tuiapp.tools.registry import Registry

    def listing(names: list[str]) -> str:
        import json
        return json.dumps([{"name": n, "description": "d", "parameters": {"type": "object"}}
                           for n in names])

    write_tool(project / "prompts" / "functions" / "grep",
               f"#!/bin/sh\n[ \"$1\" = --list-functions ] && echo '{listing(['grep'])}'\n")
    reg = Registry(Config(project_root=project))
    await reg.refresh()
    tools = reg.tools
    assert tools["grep"].source.startswith(str(project))  # the project's grep won the name
    acts = {n: policy.decide(ToolCall("1", n, {}), ApprovalConfig(), {}, spec=tools[n]).action
            for n in ("grep", "readfile", "listdir", "writefile", "execcmd")}
    assert acts == {"grep": "ask", "readfile": "allow", "listdir": "allow",
                    "writefile": "ask", "execcmd": "ask"}


BUILTIN = str(builtin_functions_dir() / "files")


@pytest.mark.parametrize(("label", "spec"), [
    ("project grep", ToolSpec("grep", "", {}, "keprompt", "/proj/prompts/functions/grep")),
    ("llm-functions grep.sh", ToolSpec("grep", "", {}, "llm-functions", "/proj/tools/grep.sh")),
    ("agent grep", ToolSpec("grep", "", {}, "llm-functions", "/proj/agents/a/tools.sh")),
    ("MCP readfile, readOnlyHint", ToolSpec(
        "readfile", "", {}, "mcp", "mcp:files",
        run={"server": "files", "tool": "readfile", "annotations": {"readOnlyHint": True}})),
    ("extension readfile", ToolSpec("readfile", "", {}, "extension", "/proj/x_tool.py")),
    ("built-in file, another format", ToolSpec("readfile", "", {}, "loki", BUILTIN)),
    ("built-in file, writing function", ToolSpec("writefile", "", {}, "keprompt", BUILTIN,
                                                 run={"exe": BUILTIN})),
    ("built-in file, run from elsewhere", ToolSpec("readfile", "", {}, "keprompt", BUILTIN,
                                                   run={"exe": "/proj/evil"})),
    ("MCP get_current_time", ToolSpec("get_current_time", "", {}, "mcp", "mcp:time")),
])
def test_namesakes_of_read_only_builtins_are_asked(label: str, spec: ToolSpec) -> None:
    verdict = policy.decide(ToolCall("1", spec.name, {}), ApprovalConfig(), {}, spec=spec)
    assert verdict.action == "ask", label


def test_no_spec_means_no_default_allow() -> None:
    assert policy.decide(ToolCall("1", "readfile", {}), ApprovalConfig(), {},
                         spec=None).action == "ask"
