"""Issue 28 item 4: the built-in `editfile` (exact search and replace) and the diff kep shows
before writefile / editfile / write_base64_file run, with the hostile files the issue names."""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

import pytest

from tests.unit.test_builtins import call, ok
from tuiapp.security import grants, policy
from tuiapp.security.display import diff_line
from tuiapp.settings import paths
from tuiapp.settings.config_types import ApprovalConfig, Rule
from tuiapp.tools.file_preview import FilePreview, describe, preview
from tuiapp.vocab.messages import ToolCall, canonical_json
from tuiapp.vocab.tool_specs import ToolSpec

FILES = str(paths.builtin_functions_dir() / "files")
UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
EDITS_SCHEMA = {"type": "array", "items": {
    "type": "object", "properties": {"search": {"type": "string"}, "replace": {"type": "string"}},
    "required": ["search", "replace"]}}


def spec(name: str) -> ToolSpec:
    props = {"filename": {"type": "string"}, "content": {"type": "string"},
             "base64_str": {"type": "string"}, "edits": EDITS_SCHEMA}
    wanted = {"writefile": ("filename", "content"), "editfile": ("filename", "edits"),
              "write_base64_file": ("filename", "base64_str")}[name]
    return ToolSpec(name, "", {"type": "object", "properties": {k: props[k] for k in wanted}},
                    "keprompt", FILES, run={"exe": FILES})


def edit(project: Path, name: str, *pairs: tuple[str, str]) -> tuple[int, str, str]:
    res = call(project, "files", "editfile",
               {"filename": name, "edits": [{"search": s, "replace": r} for s, r in pairs]})
    return res.returncode, res.stdout, res.stderr


def test_editfile_is_a_listed_builtin_with_a_schema() -> None:
    out = json.loads(os.popen(f"python3 {FILES} --list-functions").read())
    (d,) = [d for d in out if d["name"] == "editfile"]
    assert d["parameters"]["required"] == ["filename", "edits"]
    assert d["parameters"]["properties"]["edits"]["items"]["required"] == ["search", "replace"]
    assert policy.is_file_writer(spec("editfile")) and not policy.is_read_only_builtin(
        spec("editfile"))
    # by its file, never by name
    assert not policy.is_file_writer(ToolSpec("editfile", "", {}, "keprompt", "/x/files"))


def test_several_edits_apply_in_order(project: Path) -> None:
    (project / "a.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    code, out, err = edit(project, "a.py", ("return 1", "return 10"), ("def g", "def h"))
    assert code == 0, err
    assert "2 edits" in out
    assert (project / "a.py").read_text() == "def f():\n    return 10\n\ndef h():\n    return 2\n"


def test_missing_or_ambiguous_search_fails_clearly_and_writes_nothing(project: Path) -> None:
    before = "x = 1\nx = 1\ny = 2\n"
    (project / "a.py").write_text(before)
    code, _, err = edit(project, "a.py", ("y = 2", "y = 3"), ("x = 1", "x = 5"))
    assert code == 1 and "edit 2" in err and "appears 2 times" in err
    assert "nothing was written" in err
    code, _, err = edit(project, "a.py", ("zzz", "q"))
    assert code == 1 and "edit 1: the search text was not found" in err
    assert (project / "a.py").read_text() == before  # all or none
    code, _, err = edit(project, "gone.py", ("a", "b"))
    assert code == 1 and "does not exist" in err and "writefile" in err


def test_five_hundred_edits_in_one_call(project: Path) -> None:
    (project / "n.txt").write_text("".join(f"line {i}\n" for i in range(500)))
    code, _, err = edit(project, "n.txt", *[(f"line {i}\n", f"LINE {i}\n") for i in range(500)])
    assert code == 0, err
    assert (project / "n.txt").read_text() == "".join(f"LINE {i}\n" for i in range(500))


def test_crlf_invalid_utf8_binary_and_escapes(project: Path) -> None:
    (project / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    assert edit(project, "w.txt", ("one\ntwo", "1\n2"))[0] == 0
    assert (project / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"  # endings kept
    (project / "bad.txt").write_bytes(b"ok \xff\xfe here\nkeep\n")
    assert edit(project, "bad.txt", ("keep", "kept"))[0] == 0
    assert (project / "bad.txt").read_bytes() == b"ok \xff\xfe here\nkept\n"  # bytes kept
    (project / "bin.dat").write_bytes(b"\0\1\2abc")
    code, _, err = edit(project, "bin.dat", ("abc", "x"))
    assert code == 1 and "binary" in err
    (project / "e.txt").write_text("title\n")
    assert edit(project, "e.txt", ("title", "\x1b]52;c;cHduZWQ=\x07 title"))[0] == 0
    assert (project / "e.txt").read_text() == "\x1b]52;c;cHduZWQ=\x07 title\n"  # as asked


def test_a_link_out_of_the_root_is_refused(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret = 1\n")
    (project / "link.txt").symlink_to(outside)
    code, _, err = edit(project, "link.txt", ("secret = 1", "secret = 2"))
    assert code == 1 and "outside the project root" in err
    assert outside.read_text() == "secret = 1\n"
    p = preview(spec("editfile"), {"filename": "link.txt", "edits": [
        {"search": "secret = 1", "replace": "x"}]}, project)
    assert p is not None and p.error.startswith("refused") and not p.lines
    assert "secret" not in describe(p)  # nothing of the outside file reaches the screen


# ---- the preview -----------------------------------------------------------------------

def test_writefile_preview_is_a_unified_diff_with_counts(project: Path) -> None:
    (project / "a.txt").write_text("one\ntwo\nthree\n")
    p = preview(spec("writefile"), {"filename": "a.txt", "content": "one\n2\nthree\nfour\n"},
                project)
    assert p is not None
    assert (p.added, p.removed) == (2, 1)
    assert p.lines[0] == "--- a/a.txt" and p.lines[1] == "+++ b/a.txt"
    assert "-two" in p.lines and "+2" in p.lines and "+four" in p.lines
    assert "+2 −1" in p.summary()
    new = preview(spec("writefile"), {"filename": "new/b.txt", "content": "x\n"}, project)
    assert new is not None and new.note == "new file" and (new.added, new.removed) == (1, 0)
    # other tools, and a project tool that takes the name, get no preview
    other = ToolSpec("writefile", "", {}, "keprompt", str(project / "prompts/functions/files"))
    assert preview(other, {"filename": "a.txt", "content": ""}, project) is None


def test_editfile_preview_is_what_the_builtin_writes(project: Path) -> None:
    text = "a\nb\nc\n"
    (project / "a.txt").write_text(text)
    args = {"filename": "a.txt", "edits": [{"search": "b", "replace": "B\nB2"}]}
    p = preview(spec("editfile"), args, project)
    assert p is not None and (p.added, p.removed) == (2, 1) and not p.error
    ok(project, "files", "editfile", args)
    assert (project / "a.txt").read_text() == "a\nB\nB2\nc\n"
    twice = preview(spec("editfile"), {"filename": "a.txt", "edits": [
        {"search": "B", "replace": "x"}]}, project)
    assert twice is not None and "appears 2 times" in twice.error and not twice.lines


def test_hostile_contents_reach_the_screen_printable_and_bounded(project: Path) -> None:
    (project / "long.txt").write_text("x" * (2 << 20) + "\n")
    p = preview(spec("writefile"), {"filename": "long.txt", "content": "y\n"}, project)
    assert p is not None and p.removed == 1
    shown = [diff_line(line) for line in p.lines]
    assert max(map(len, shown)) < 1100 and any("more characters" in s for s in shown)
    (project / "bad.txt").write_bytes(b"ok \xff\n")
    p = preview(spec("writefile"), {"filename": "bad.txt", "content": "ok\n"}, project)
    assert p is not None and "UTF-8" in p.note and p.removed == 1
    (project / "bin.dat").write_bytes(b"\0" * 10)
    p = preview(spec("write_base64_file"), {"filename": "bin.dat",
                                            "base64_str": base64.b64encode(b"\0\1").decode()},
                project)
    assert p is not None and "binary" in p.note and not p.lines
    (project / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    p = preview(spec("writefile"), {"filename": "crlf.txt", "content": "a\r\nc\r\n"}, project)
    assert p is not None and "CRLF" in p.note and "+c" in p.lines and "-b" in p.lines
    hostile = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\x9b31m[b]markup[/b]\u202e"
    p = preview(spec("writefile"), {"filename": "crlf.txt", "content": hostile}, project)
    assert p is not None
    for line in [p.summary(), *p.lines]:
        assert not UNSAFE.search(diff_line(line)), line
    assert any("␛]52" in diff_line(line) for line in p.lines)  # shown, not hidden


def test_a_huge_diff_is_cut_and_counted(project: Path) -> None:
    (project / "big.txt").write_text("".join(f"{i}\n" for i in range(5000)))
    p = preview(spec("writefile"), {"filename": "big.txt", "content": ""}, project)
    assert p is not None and p.removed == 5000 and p.more > 0 and len(p.lines) == 2000
    assert f"{p.more} more diff lines" in describe(p)


def test_preview_lines_have_the_type_the_screen_expects() -> None:
    p = FilePreview("x", ("+a",), 1, 0)
    assert isinstance(p.lines, tuple) and p.summary() == "x  +1 −0"


# ---- "always" for them is per path -----------------------------------------------------

def test_editfile_always_is_offered_per_file_and_covers_only_that_file() -> None:
    s = spec("editfile")
    args = {"filename": "src/a.py", "edits": [{"search": "x", "replace": "y"}]}
    c = ToolCall("c", "editfile", args, canonical_json(args))
    first = grants.scopes(c, s)[0]
    assert first.label == "editfile on the file src/a.py"

    def allowed(a: dict) -> bool:
        rule = Rule(first.tool, "allow", first.args, "grant")
        one = ToolCall("c", "editfile", a, canonical_json(a))
        return policy.decide(one, ApprovalConfig("ask", (rule,)), {}, spec=s).action == "allow"

    assert allowed({"filename": "src/a.py", "edits": [
        {"search": 'q"', "replace": "\\"}, {"search": "1", "replace": "2"}]})
    assert not allowed({"filename": "src/b.py", "edits": [{"search": "x", "replace": "y"}]})
    assert not allowed({"filename": "src/a.py", "edits": [
        {"search": "x", "replace": "y", "filename": "/etc/passwd"}]})
    assert not allowed({"filename": "src/a.py", "edits": [{"search": ["x"], "replace": "y"}]})


@pytest.mark.parametrize("name", ["writefile", "editfile"])
def test_every_file_writer_gets_a_path_scope_first(name: str) -> None:
    args = {"filename": "docs/x.md", "content": "x",
            "edits": [{"search": "a", "replace": "b"}]}
    props = spec(name).parameters["properties"]
    args = {k: v for k, v in args.items() if k in props}
    c = ToolCall("c", name, args, canonical_json(args))
    labels = [s.label for s in grants.scopes(c, spec(name))]
    assert labels[0] == f"{name} on the file docs/x.md"
    assert labels[1] == f"{name} on files under docs/"


def test_kep_call_shows_the_same_diff_before_it_writes(project: Path) -> None:
    from tests.unit.test_cli_functions_call import kep

    (project / "kep.toml").write_text("")
    (project / "a.txt").write_text("one\ntwo\n")
    args = json.dumps({"filename": "a.txt", "edits": [
        {"search": "two", "replace": "2 \x1b]52;c;eA==\x07"}]})
    res = kep("call", "editfile", args, "--project", str(project))
    assert res.returncode == 0, res.stderr
    assert "a.txt  +1 −1" in res.stderr and "-two" in res.stderr and "+2 ␛]52" in res.stderr
    assert "\x1b" not in res.stderr  # not a terminal: no colour, and nothing raw
    assert (project / "a.txt").read_text() == "one\n2 \x1b]52;c;eA==\x07\n"
    res = kep("call", "editfile", json.dumps({"filename": "a.txt", "edits": [
        {"search": "zzz", "replace": ""}]}), "--project", str(project))
    assert res.returncode == 1 and "not found" in res.stderr
