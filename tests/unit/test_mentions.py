"""`@` mentions attach project files and images through the one reader, confinement and the
secrets filter (issue 28, items 2 and 3). Every hostile file is refused with one line, and
nothing blocks or is read whole when it must not be."""

from __future__ import annotations

import asyncio
import base64
import os
import time
from pathlib import Path

import pytest

from tuiapp.conversation import mentions
from tuiapp.conversation.mentions import attach, attach_for, quote
from tuiapp.conversation.mentions import mentions as names
from tuiapp.security import secrets
from tuiapp.vocab.messages import Attachment, Message

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
JPEG = b"\xff\xd8\xff\xe0" + b"\0" * 64
SECRET = "sk-mention-Secret-0123456789abcdef"


def run(text: str, root: Path, **kw: object) -> mentions.Attached:
    return asyncio.run(attach(text, root, **kw))  # type: ignore[arg-type]


def test_names_are_found_quoted_and_unquoted() -> None:
    assert names('see @a.py and @"my file.txt" but not me@example.com; @a.py') == [
        "a.py", "my file.txt"]
    for hostile in ("tab\there", "new\nline", 'q"uote', "back\\slash", "\x1b[31mred"):
        assert names(f"x {quote(hostile)} y") == [hostile]


def test_a_text_file_is_attached_and_the_message_keeps_its_text(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# notes\nhello\n")
    got = run("summarise @notes.md, please", tmp_path)
    assert got.notes == []
    [a] = got.attachments
    assert (a.name, a.text, a.is_image, a.size) == ("notes.md", "# notes\nhello\n", False, 14)


def test_secrets_in_a_file_never_reach_the_attachment(tmp_path: Path) -> None:
    secrets.note_dotenv({"SERVICE_TOKEN": SECRET})
    (tmp_path / "config.py").write_text(f"TOKEN = '{SECRET}'\n")
    [a] = run("@config.py", tmp_path).attachments
    assert SECRET not in a.text and "redacted" in a.text


def test_dotenv_and_a_hard_link_to_it_are_refused_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"KEY={SECRET}\n")
    os.link(tmp_path / ".env", tmp_path / "innocent.txt")
    got = run("@.env and @innocent.txt", tmp_path)
    assert got.attachments == []
    assert len(got.notes) == 2
    assert "hidden" in got.notes[0] and ".env" in got.notes[0]
    assert "hard link" in got.notes[1]
    assert SECRET not in "".join(got.notes)


def test_outside_the_root_and_a_symlink_out_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("outside\n")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    got = run("@../secret.txt @link.txt @/etc/hostname", root)
    assert got.attachments == []
    assert len(got.notes) == 3 and all("outside the project" in n for n in got.notes)


def test_a_2gb_sparse_file_is_refused_by_its_size_without_being_read(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    with open(big, "wb") as f:
        f.truncate(2 * 1024**3)
    start = time.perf_counter()
    got = run("@big.log", tmp_path)
    assert got.attachments == [] and "too big" in got.notes[0]
    assert time.perf_counter() - start < 5  # reading 2 GB of zeros would take far longer


def test_a_text_file_over_the_cap_is_refused_with_a_line(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * (mentions.TEXT_CAP + 1))
    got = run("@big.txt", tmp_path)
    assert got.attachments == [] and "too big to attach" in got.notes[0]


def test_a_fifo_does_not_block(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    got = asyncio.run(asyncio.wait_for(attach("@pipe", tmp_path), 5))
    assert got.attachments == [] and "not a regular file" in got.notes[0]


def test_invalid_utf8_is_refused_with_where(tmp_path: Path) -> None:
    (tmp_path / "bad.txt").write_bytes(b"ok\n\xff\xfe oops")
    got = run("@bad.txt", tmp_path)
    assert got.attachments == [] and "not valid UTF-8 at line 2" in got.notes[0]


def test_images_are_known_by_their_bytes_not_their_name(tmp_path: Path) -> None:
    (tmp_path / "real.png").write_bytes(PNG)
    (tmp_path / "liar.png").write_text("I am text pretending to be a picture\n")
    (tmp_path / "jpeg.png").write_bytes(JPEG)
    got = run("@real.png @liar.png @jpeg.png", tmp_path)
    assert [(a.name, a.media_type) for a in got.attachments] == [
        ("real.png", "image/png"), ("jpeg.png", "image/jpeg")]
    assert base64.b64decode(got.attachments[0].data) == PNG
    [note] = got.notes
    assert "liar.png" in note and "not a png, jpeg, gif or webp" in note


def test_names_with_control_characters_stay_one_line(tmp_path: Path) -> None:
    name = "evil\x1b[2Jname\tx\n.txt"
    (tmp_path / name).write_bytes(b"\xff")
    got = run(f"look {quote(name)}", tmp_path)
    [note] = got.notes
    assert "\x1b" not in note and "\n" not in note and "\\x1b" in note


def test_tab_and_newline_in_a_quoted_path_attach_that_file(tmp_path: Path) -> None:
    name = "a\tb\nc.txt"
    (tmp_path / name).write_text("content\n")
    [a] = run(f"read {quote(name)}", tmp_path).attachments
    assert a.name == name and a.text == "content\n"


def test_a_mention_of_nothing_stays_text_with_a_line(tmp_path: Path) -> None:
    got = run("ask @alice about it", tmp_path)
    assert got.attachments == [] and "no such file" in got.notes[0]


def test_too_many_and_too_much_text_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                               ) -> None:
    for i in range(mentions.MAX_ATTACHMENTS + 3):
        (tmp_path / f"f{i}.txt").write_text("y\n")
    text = " ".join(f"@f{i}.txt" for i in range(mentions.MAX_ATTACHMENTS + 3))
    got = run(text, tmp_path)
    assert len(got.attachments) == mentions.MAX_ATTACHMENTS
    assert len(got.notes) == 3 and "at most" in got.notes[0]
    monkeypatch.setattr(mentions, "TOTAL_CAP", 3)
    got = run("@f1.txt @f2.txt", tmp_path)
    assert len(got.attachments) == 1 and "at most" in got.notes[0]


def test_the_offline_model_drops_images_with_a_line(tmp_path: Path) -> None:
    (tmp_path / "pic.png").write_bytes(PNG)
    got = asyncio.run(attach_for("@pic.png", tmp_path, takes_images=False, model="offline"))
    assert got.attachments == [] and got.notes == ["@pic.png: offline takes no images; not sent"]


def test_attachments_survive_the_store_round_trip_and_the_chip_is_short() -> None:
    big = "line\n" * 10_000
    m = Message("user", "see", attachments=(
        Attachment("a.txt", text=big, size=len(big)),
        Attachment("p.png", media_type="image/png", data=base64.b64encode(PNG).decode(),
                   size=len(PNG))))
    back = Message.from_dict(m.to_dict())
    assert back == m
    shown = m.with_chips()
    assert shown.splitlines() == ["see", "📎 a.txt · text, 48.8 KiB", "📎 p.png · image/png, 72 B"]
    assert "data" not in str(m.to_dict(image_data=False)["attachments"][1])
    # A hand-edited record is left out rather than sent.
    bad = m.to_dict()
    bad["attachments"] += [{"name": "x", "media_type": "text/html", "data": "AAAA"}, 5]
    assert Message.from_dict(bad).attachments == m.attachments


def test_a_pasted_path_becomes_a_mention(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "img dir").mkdir(parents=True)
    pic = root / "img dir" / "shot.png"
    pic.write_bytes(PNG)
    outside = tmp_path / "elsewhere.png"
    outside.write_bytes(PNG)
    want = '@"img dir/shot.png" '
    assert mentions.pasted_mention(str(pic), root) == want
    assert mentions.pasted_mention(f"'{pic}'\n", root) == want
    assert mentions.pasted_mention(str(pic).replace(" ", "\\ "), root) == want
    assert mentions.pasted_mention("file://" + str(pic).replace(" ", "%20"), root) == want
    # Outside the project: the mention names it, and sending refuses it with a line.
    assert mentions.pasted_mention(str(outside), root) == f"@{outside} "
    got = run(f"@{outside}", root)
    assert got.attachments == [] and "outside the project" in got.notes[0]
    for text in ("just words", "relative.png", f"{pic}\n{pic}", str(tmp_path)):
        assert mentions.pasted_mention(text, root) is None


def test_show_and_markdown_export_name_attachments_not_their_content() -> None:
    from types import SimpleNamespace

    from tuiapp.conversation import transcript

    info = SimpleNamespace(id="s1", model="m", project_root="/p", created=0, updated=0,
                           message_count=1, input_tokens=0, output_tokens=0, title="")
    m = Message("user", "see", attachments=(Attachment("a.txt", text="SECRET BODY", size=11),))
    t = SimpleNamespace(info=info, messages=[m], call_records=lambda: {})
    for text in (transcript.to_text(t), transcript.to_markdown(t)):  # type: ignore[arg-type]
        assert "📎 a.txt · text, 11 B" in text and "SECRET BODY" not in text


def test_kep_run_attaches_mentions_and_says_what_it_refused(tmp_path: Path) -> None:
    import json
    import subprocess

    from conftest import KEP, kep_env

    (tmp_path / "kep.toml").write_text("")
    (tmp_path / "notes.txt").write_text("hello from notes\n")
    (tmp_path / "pic.png").write_bytes(PNG)
    (tmp_path / ".env").write_text(f"K={SECRET}\n")
    done = subprocess.run([*KEP, "run", "--project", str(tmp_path), "--model", "offline",
                           "--json", "see @notes.txt @pic.png @.env"], capture_output=True,
                          text=True, env=kep_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    users = [e["message"] for e in events
             if e.get("type") == "MessageAdded" and e["message"]["role"] == "user"]
    assert users[0]["attachments"] == [{"name": "notes.txt", "size": 17,
                                        "text": "hello from notes\n"}]
    out = done.stdout + done.stderr
    assert "@.env: a hidden file" in out and "@pic.png: offline takes no images" in out
    assert SECRET not in out
