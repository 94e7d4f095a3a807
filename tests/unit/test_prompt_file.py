"""keprompt `.prompt` files: the parser, the evaluator in-process, and `kep run --prompt`
end to end against the fake LLM server (the request log shows exactly what was sent) and the
offline model."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import KEP, kep_env
from fakes.llm_server import FakeLLMServer

from tuiapp.conversation import prompt_variables
from tuiapp.conversation.conversation import Conversation, allow_all
from tuiapp.conversation.prompt_calls import parse_cmd
from tuiapp.conversation.prompt_file import load, parse
from tuiapp.conversation.prompt_model import PromptError
from tuiapp.conversation.prompt_run import PromptRun
from tuiapp.conversation.prompt_statements import entry_matches
from tuiapp.conversation.prompt_variables import substitute
from tuiapp.project.system_prompt import base_prompt
from tuiapp.providers.base import Provider, StreamEnd, StreamItem
from tuiapp.settings.config_types import ApprovalConfig, Rule
from tuiapp.vocab.events import Event, PromptOutput, TextDelta, ToolCallRequested, ToolFinished
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "prompts"


def setup_project(root: Path, *, provider_url: str | None = None) -> Path:
    """A project with the fixture prompts, their functions and the files they include."""
    (root / "prompts" / "functions").mkdir(parents=True, exist_ok=True)
    for p in FIXTURES.glob("*.prompt"):
        shutil.copy(p, root / "prompts" / p.name)
    for p in (FIXTURES / "functions").iterdir():
        shutil.copy(p, root / "prompts" / "functions" / p.name)
        (root / "prompts" / "functions" / p.name).chmod(0o755)
    shutil.copytree(FIXTURES / "files", root, dirs_exist_ok=True)
    toml = "[tools]\nbuiltins = false\n"
    if provider_url:
        toml += (f'[providers.fake]\napi = "chat"\nbase_url = "{provider_url}"\n'
                 'api_key_env = "FAKE_LLM_KEY"\n')
    (root / "kep.toml").write_text(toml)
    return root


def kep(root: Path, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, "run", "--project", str(root), *argv], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env=kep_env(FAKE_LLM_KEY="sk-fake"))


# ---- in-process helpers -------------------------------------------------------------------

SPEC_PARAMS = {"type": "object", "properties": {"text": {"type": "string"},
                                                "count": {"type": "integer"}}}
ECHO = ToolSpec("echo_args", "echo", SPEC_PARAMS, "keprompt", "/p/prompts/functions/helpers")
SHOUT = ToolSpec("shout", "shout", SPEC_PARAMS, "keprompt", "/p/prompts/functions/helpers")
HIDDEN = ToolSpec("hidden", "hidden", {}, "keprompt", "/p/prompts/functions/extra")
TOOLS = {t.name: t for t in (ECHO, SHOUT, HIDDEN)}


class Scripted(Provider):
    """Replies from a list; records what each request carried."""

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[list[Message], list[str], str | None]] = []

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                     system: str | None) -> AsyncIterator[StreamItem]:
        self.requests.append((list(messages), [t.name for t in tools], system))
        yield TextDelta(self.replies.pop(0))
        yield StreamEnd("end_turn")


async def echo_executor(spec: ToolSpec, call: ToolCall, emit: Any) -> ToolFinished:
    fin = ToolFinished(call.id, call.name, "ok", 0, 1,
                       f"{call.name}:{json.dumps(call.arguments, sort_keys=True)}\n")
    emit(fin)
    return fin


def run_prompt(text: str, replies: Sequence[str] = ("ok",), values: dict[str, Any] | None = None,
               approval: ApprovalConfig | None = None) -> tuple[Scripted, list[Event], PromptRun]:
    pf = parse(text, "t.prompt")
    run = PromptRun(pf, Path("/tmp"), lambda: TOOLS, values or {})
    provider = Scripted(replies)
    events: list[Event] = []
    conv = Conversation(provider, lambda: TOOLS, lambda: approval or ApprovalConfig("allow"),
                        allow_all, echo_executor, events.append, system=run.system_text,
                        allow_only=run.allow_only)
    asyncio.run(run.run(conv))
    return provider, events, run


# ---- parsing --------------------------------------------------------------------------------

def test_statements_continuation_lines_and_comments() -> None:
    pf = load(FIXTURES / "everything.prompt")
    kinds = [s.keyword for s in pf.statements]
    assert kinds == [".prompt", ".#", ".functions", ".system", ".set", ".user", ".include",
                     ".text", ".include", ".cmd", ".cmd", ".image", ".exec", ".assistant",
                     ".user", ".exec", ".print", ".exit", ".user"]
    system = pf.statements[3]
    assert system.value == "You write about <<topic>>.\n  Keep it short."  # indentation kept
    user = pf.statements[5]
    assert (user.line, user.value) == (7, "<<greeting>> from <<who>>, about <<topic>>:\n"
                                          "line two, continued")
    assert pf.meta["params"] == {"topic": "kep", "model": "gpt-4o"}
    # brace-less keprompt header works too
    assert parse('.prompt "name":"x", "version":"1"\n.user hi\n', "x").meta["name"] == "x"


def test_variables_params_and_missing() -> None:
    pf = load(FIXTURES / "everything.prompt")
    by_name = {v.name: v for v in prompt_variables.variables(pf)}
    assert set(by_name) == {"topic", "who", "n"}  # greeting is .set, echoed is `as`, and
    # the keprompt-only `model` param is no variable for kep
    assert by_name["topic"].default == "kep" and by_name["who"].line == 7
    assert [v.name for v in prompt_variables.missing(pf, {"who": "Ann"})] == ["n"]


@pytest.mark.parametrize(("text", "line", "says"), [
    ('.prompt {"name": "x"\n.user hi\n', 1, "not valid JSON"),
    (".user hi\n.set lonely\n", 2, "needs a variable name and a value"),
    (".user hi\n.functions good, bad name!\n", 2, "'name!' is not name"),
    (".user hi\n\n.cmd echo_args(1, 2)\n", 3, "arguments are name=value"),
    ('.user hi\n.cmd echo_args(text="open)\n', 2, "unclosed \" quote"),
    (".user hi\n.cmd not a call\n", 2, "needs a call"),
    (".user hi\n.clear [\"*.log\"]\n", 2, "deletes files"),
    ('.user hi\n.prompt {"name": "late"}\n', 2, "must be the first statement"),
    (".user hi\n.image\n", 2, "needs a file path"),
    (".# only a comment\n", 0, "no statements"),
])
def test_syntax_errors_name_file_line_and_statement(text: str, line: int, says: str) -> None:
    with pytest.raises(PromptError) as e:
        parse(text, "prompts/bad.prompt")
    assert e.value.line == line and says in e.value.message
    shown = str(e.value)
    assert shown.startswith(f"prompts/bad.prompt:{line}: " if line else "prompts/bad.prompt: ")
    if line:
        assert text.splitlines()[line - 1].strip() in shown  # the statement itself


def test_cmd_arguments_are_real_literals() -> None:
    pf = parse('.user x\n.cmd f(a="x, y", b=3, c=1.5, d=true, e=[1, "z"], f=data/x.txt, '
               "g='it''s', h=None, i={\"k\": 1}) as out\n", "t")
    cmd = parse_cmd(pf, pf.statements[1])
    assert cmd.name == "f" and cmd.target == "out"
    assert cmd.arguments == {"a": "x, y", "b": 3, "c": 1.5, "d": True, "e": [1, "z"],
                             "f": "data/x.txt", "g": "its", "h": None, "i": {"k": 1}}


def test_substitution_is_one_pass() -> None:
    values = {"a": "<<b>>", "b": "no", "cfg": {"x": {"y": 2}}}
    assert substitute("<<a>> <<cfg.x.y>> a<<b", values) == "<<b>> 2 a<<b"


# ---- running (in-process) ---------------------------------------------------------------------

def test_model_reply_with_template_text_survives() -> None:
    provider, events, _ = run_prompt(
        ".user first\n.exec\n.user You said: <<last_response>>\n.exec\n"
        ".print final: <<last_response>>\n",
        replies=["I like <<x>> and <<last_response>>", "done <<y>>"])
    second = provider.requests[1][0]
    assert second[-1].content == "You said: I like <<x>> and <<last_response>>"
    assert [e.text for e in events if isinstance(e, PromptOutput)] == ["final: done <<y>>"]
    assert len(provider.requests) == 2  # a trailing .print does not send again


def test_functions_allow_list_forms() -> None:
    assert entry_matches("echo_args", ECHO) and not entry_matches("echo_args", SHOUT)
    assert entry_matches("helpers.*", SHOUT) and not entry_matches("helpers.*", HIDDEN)
    assert entry_matches("extra.hidden", HIDDEN) and not entry_matches("helpers.hidden", HIDDEN)
    provider, _, _ = run_prompt(".functions shout, extra.hidden\n.user hi\n")
    assert sorted(provider.requests[0][1]) == ["hidden", "shout"]
    provider, _, _ = run_prompt(".user hi\n")  # keprompt: no .functions → no tools
    assert provider.requests[0][1] == []


def test_unknown_function_or_tool_is_caught_before_sending() -> None:
    for text, says in ((".functions nosuch\n.user hi\n", "no tool matches 'nosuch'"),
                       (".user hi\n.cmd nosuch(a=1)\n", "no tool 'nosuch'"),
                       (".user hi\n.cmd echo_args(count=many)\n", "invalid arguments"),
                       (".user <<x>>\n.set x 1\n", "used before the `.set x`"),
                       (".user <<last_response>>\n", "before any .exec"),
                       (".exec\n", "nothing to send")):
        pf = parse(text, "t.prompt")
        run = PromptRun(pf, Path("/tmp"), lambda: TOOLS)
        provider = Scripted([])
        conv = Conversation(provider, lambda: TOOLS, ApprovalConfig, allow_all, echo_executor,
                            lambda e: None)
        with pytest.raises(PromptError, match=says):
            asyncio.run(run.run(conv))
        assert provider.requests == [] and conv.history == []


def test_cmd_runs_through_policy_and_events() -> None:
    provider, events, _ = run_prompt(
        ".user head\n.cmd echo_args(text=<<w>>, count=<<n>>)\n.cmd shout(text=x) as loud\n"
        ".text tail <<loud>>\n", values={"w": "hey, you", "n": "7"})
    sent = provider.requests[0][0][0].content
    assert sent == ('head\necho_args:{"count": 7, "text": "hey, you"}\ntail shout:{"text": "x"}')
    requested = [e.call.name for e in events if isinstance(e, ToolCallRequested)]
    assert requested == ["echo_args", "shout"]
    deny = ApprovalConfig("allow", (Rule("shout", "deny", origin="test"),))
    with pytest.raises(PromptError, match=r"t.prompt:2: `.cmd shout` denied"):
        run_prompt(".user a\n.cmd shout(text=x)\n", approval=deny)


def test_system_assistant_tool_call_and_exit() -> None:
    provider, _, _ = run_prompt(
        ".system Be <<mood>>.\n.text Really.\n.user q\n.assistant prefill\n"
        '.tool_call echo_args(text="t") id=c1\n.tool_result id=c1 name=echo_args\nresult text\n'
        ".exec\n.exit\n.user never\n", values={"mood": "kind"})
    messages, _, system = provider.requests[0]
    assert system == "Be kind.\nReally."
    assert [(m.role, m.content) for m in messages] == [
        ("user", "q"), ("assistant", "prefill"), ("assistant", ""), ("tool", "result text")]
    assert messages[2].tool_calls[0].arguments == {"text": "t"}
    assert len(provider.requests) == 1


# ---- kep run --prompt ---------------------------------------------------------------------

@pytest.mark.slow
def test_every_statement_against_the_fake_server(project: Path) -> None:
    replies = [{"text": "Reply one: <<x>> and <<topic>> stay."}, {"text": "Second reply."}]
    with FakeLLMServer(replies) as server:
        root = setup_project(project, provider_url=server.base_url)
        r = kep(root, "--prompt", "everything", "--model", "fake/test-model", "--yes",
                "--set", "who=Ann", "--set", "n=5")
        requests = list(server.requests)
    assert r.returncode == 0, r.stderr
    assert len(requests) == 2  # the .user after .exit is never sent
    first, second = (q.body for q in requests)
    system = {"role": "system",
              "content": base_prompt(root.resolve()) + "\n\nYou write about kep.\n"
                         "  Keep it short."}
    user1 = ("Hello from Ann, about kep:\nline two, continued\n"
             "Data file with <<not_a_var>> inside.\n"
             "A .text statement, added to the same message.\nnote A\nnote B\n"
             'echo:{"count": 3, "flag": true, "text": "a, b"}')
    assert first["messages"][:2] == [system, {"role": "user", "content": user1}]
    image = first["messages"][2]
    assert image["role"] == "user" and image["content"][0]["type"] == "image_url"
    assert image["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert len(first["messages"]) == 3
    assert sorted(t["function"]["name"] for t in first["tools"]) == [
        "echo_args", "lonely", "one_more", "shout"]  # `hidden` is not allow-listed
    assert second["messages"][3:] == [
        {"role": "assistant", "content": "Reply one: <<x>> and <<topic>> stay."},
        {"role": "assistant", "content": "An author-written assistant turn."},
        {"role": "user", "content": "The model said: Reply one: <<x>> and <<topic>> stay.\n"
                                    'Echo was: echo:{"count": 5, "text": "Ann"}'}]
    assert r.stdout.splitlines()[-1] == "Done: Second reply."
    assert "→ echo_args" in r.stderr  # author calls are shown like any other
    assert "'gpt-4o' is not used" in r.stderr


@pytest.mark.slow
def test_offline_model_runs_the_tool_a_user_line_names(project: Path) -> None:
    root = setup_project(project)
    r = kep(root, "--prompt", "offline_tool", "--model", "offline", "--set", "word=loud", "-y")
    assert r.returncode == 0, r.stderr
    assert "LOUD" in r.stdout and "shout" in r.stdout


def test_cli_errors_exit_2_and_send_nothing(project: Path) -> None:
    with FakeLLMServer([{"text": "never"}]) as server:
        root = setup_project(project, provider_url=server.base_url)
        bad = kep(root, "--prompt", "broken", "--model", "fake/m")
        missing = kep(root, "--prompt", "everything", "--model", "fake/m", "--set", "who=Ann")
        assert server.requests == []
    assert bad.returncode == 2
    assert "prompts/broken.prompt:3: `.cmd` arguments: unclosed \" quote" in bad.stderr
    assert missing.returncode == 2
    assert "needs values for: n" in missing.stderr and "--set n=VALUE" in missing.stderr


def test_a_prompt_that_fails_its_check_leaves_no_session_behind(project: Path) -> None:
    from tuiapp.conversation.store import Store

    with FakeLLMServer([{"text": "never"}]) as server:
        root = setup_project(project, provider_url=server.base_url)
        (root / "prompts" / "unknown_tool.prompt").write_text(".functions nosuch\n.user hi\n")
        r = kep(root, "--prompt", "unknown_tool", "--model", "fake/m")
        assert server.requests == []
    assert r.returncode == 2
    assert "no tool matches 'nosuch'" in r.stderr and "nothing was sent" in r.stderr
    store = Store.open()
    try:
        assert store.list_sessions(root) == []  # no empty record to --continue into
    finally:
        store.close()


def test_a_prompt_whose_cmd_fails_before_anything_is_sent_leaves_no_session(project: Path) -> None:
    """A `.cmd` that fails at run time ends the start before any message reaches the model: no
    "(no message)" record is left for `--continue` to land in (the tool's error is on stderr)."""
    from tuiapp.conversation.store import Store

    with FakeLLMServer([{"text": "never"}]) as server:
        root = setup_project(project, provider_url=server.base_url)
        boom = root / "prompts" / "functions" / "boom"
        boom.write_text("#!/bin/sh\nif [ \"$1\" = --list-functions ]; then echo '[{\"name\": "
                        "\"boom\", \"description\": \"d\", \"parameters\": {\"type\": "
                        "\"object\"}}]'; exit 0; fi\necho no-such-file >&2; exit 1\n")
        boom.chmod(0o755)
        (root / "prompts" / "failing_cmd.prompt").write_text(".cmd boom()\n.user hi\n")
        r = kep(root, "--yes", "--prompt", "failing_cmd", "--model", "fake/m")
        assert server.requests == []
    assert r.returncode == 1
    assert "no-such-file" in r.stderr and "Traceback" not in r.stderr
    store = Store.open()
    try:
        assert store.list_sessions(root) == []
    finally:
        store.close()
