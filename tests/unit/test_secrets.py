"""The secrets registry: child environments, the redaction filter (whole and streamed), error
scrubbing and config masking. The end-to-end leaks are in test_secrets_leaks.py."""

from __future__ import annotations

import random

import pytest

from tuiapp.project import config as project_config
from tuiapp.security import secrets
from tuiapp.security.secrets import MIN_SECRET_LEN, Secrets
from tuiapp.settings import config, config_types
from tuiapp.vocab.trust_state import TrustState

KEY = "sk-proj-REALKEY-0123456789abcdefghij"
TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123"


@pytest.fixture(autouse=True)
def forget_dotenv(monkeypatch: pytest.MonkeyPatch) -> None:
    """`.env` names are process-wide (like os.environ): each test starts with none."""
    monkeypatch.setattr(secrets, "_dotenv_names", set())
    monkeypatch.setattr(secrets, "_passed_values", {})


def reg(**named: str) -> Secrets:
    return Secrets.of(named)


def stream_all(s: Secrets, chunks: list[bytes]) -> bytes:
    r = s.stream()
    return b"".join(r.feed(c) for c in chunks) + r.flush()


# ---- redaction -------------------------------------------------------------------------------


def test_redact_names_the_variable_and_keeps_the_rest() -> None:
    s = reg(OPENAI_API_KEY=KEY, GH_TOKEN=TOKEN)
    text = f"key={KEY}\ttoken:{TOKEN}\n{KEY}{KEY}"
    out = s.redact(text)
    assert KEY not in out and TOKEN not in out
    assert out == ("key=[redacted OPENAI_API_KEY]\ttoken:[redacted GH_TOKEN]\n"
                   "[redacted OPENAI_API_KEY][redacted OPENAI_API_KEY]")


def test_short_values_are_not_redacted_but_still_kept_from_children() -> None:
    s = reg(DEBUG_TOKEN="1234567", OPENAI_API_KEY=KEY)  # 7 < MIN_SECRET_LEN
    assert MIN_SECRET_LEN == 8
    assert s.redact("x 1234567 y") == "x 1234567 y"
    env = s.child_env({"DEBUG_TOKEN": "1234567", "PATH": "/bin"})
    assert env == {"PATH": "/bin"}


def test_a_key_split_at_every_byte_is_still_caught() -> None:
    s = reg(OPENAI_API_KEY=KEY)
    data = f"before {KEY} middle {KEY}after".encode()
    want = s.redact_bytes(data)
    for cut in range(1, len(data)):
        assert stream_all(s, [data[:cut], data[cut:]]) == want, cut
    one_by_one = [data[i:i + 1] for i in range(len(data))]
    assert stream_all(s, one_by_one) == want


def test_random_chunking_with_overlapping_keys_and_bad_utf8() -> None:
    # One key is a prefix of another; invalid UTF-8 and control bytes around them.
    short, long = "abcdefgh-secret", "abcdefgh-secret-and-longer"
    s = Secrets.of({"SHORT_KEY": short, "LONG_KEY": long})
    data = (b"\xff\xfe" + long.encode() + b"\x1b[31m" + short.encode() + b"\x00abcdefgh-sec"
            + b"\xc3" + long.encode())
    want = s.redact_bytes(data)
    assert b"[redacted LONG_KEY]" in want and b"[redacted SHORT_KEY]" in want
    rnd = random.Random(7)
    for _ in range(300):
        cuts = sorted(rnd.sample(range(1, len(data)), rnd.randint(1, 12)))
        chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        assert stream_all(s, chunks) == want


def test_only_a_possible_key_start_is_held_back() -> None:
    s = reg(OPENAI_API_KEY=KEY)
    r = s.stream()
    assert r.feed(b"progress 50%\n") == b"progress 50%\n"  # nothing held: streams at once
    assert r.feed(b"value: sk-pro") == b"value: "  # could start the key: held
    assert r.feed(b"ject\n") == b"sk-project\n"  # it did not
    assert r.flush() == b""


def test_a_2mb_line_and_500_secrets() -> None:
    named = {f"K{i}_TOKEN": f"secret-{i:04d}-{'x' * (i % 40)}" for i in range(500)}
    s = Secrets.of(named)
    line = ("." * 1000).join(named.values()) * 4
    data = (line * (2_000_000 // len(line) + 1))[:2_000_000].encode()
    out = stream_all(s, [data[i:i + 65536] for i in range(0, len(data), 65536)])
    assert not any(v.encode() in out for v in named.values())
    assert b"[redacted K499_TOKEN]" in out


def test_no_secrets_means_no_change_and_no_delay() -> None:
    r = Secrets().stream()
    assert r.feed(b"sk-") == b"sk-"
    assert Secrets().redact("anything") == "anything"


# ---- the child's environment -------------------------------------------------------------------


def test_child_env_drops_provider_and_dotenv_keys_and_copies_of_them(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text("SERVICE_SECRET=dotenv-secret-value-1\nPATH_EXTRA=ok-value-2\n")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("COPY_OF_KEY", KEY)  # another name, same value
    monkeypatch.setenv("MY_PROVIDER_TOKEN", "custom-provider-token-9")
    monkeypatch.setenv("SERVICE_SECRET", "")  # restored (removed) after the test
    monkeypatch.setenv("PATH_EXTRA", "")
    monkeypatch.delenv("SERVICE_SECRET")
    monkeypatch.delenv("PATH_EXTRA")
    project_config.load_dotenv(tmp_path, TrustState(str(tmp_path), True))
    cfg = config.parse({"providers": {"mine": {"api": "chat", "api_key_env": "MY_PROVIDER_TOKEN"}},
                        "tools": {"pass_env": ["PATH_EXTRA"]}}, "test", tmp_path)
    env = secrets.child_env(cfg)
    for name in ("OPENAI_API_KEY", "COPY_OF_KEY", "MY_PROVIDER_TOKEN", "SERVICE_SECRET"):
        assert name not in env
    assert env["PATH_EXTRA"] == "ok-value-2"  # passed on purpose
    assert env["PATH"] == __import__("os").environ["PATH"]
    s = secrets.collect(cfg)
    assert s.redact(f"{KEY} dotenv-secret-value-1 custom-provider-token-9") == (
        "[redacted OPENAI_API_KEY] [redacted SERVICE_SECRET] [redacted MY_PROVIDER_TOKEN]")


def test_pass_env_must_be_a_list_of_names(tmp_path) -> None:
    with pytest.raises(config_types.ConfigError, match=r"tools\.pass_env"):
        config.parse({"tools": {"pass_env": "OPENAI_API_KEY"}}, "kep.toml", tmp_path)


def test_server_env_expands_from_keps_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    out = secrets.expand_vars({"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}",
                               "MIXED": "a-${GITHUB_TOKEN}-b", "UNSET": "${NOPE_NOT_SET}",
                               "LITERAL": "$GITHUB_TOKEN"})
    assert out == {"GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN, "MIXED": f"a-{TOKEN}-b", "UNSET": "",
                   "LITERAL": "$GITHUB_TOKEN"}


# ---- error text ----------------------------------------------------------------------------------


@pytest.mark.parametrize("shown", [
    KEY,  # whole
    KEY[:26] + "****",  # the prefix an API echoes
    KEY[5:19],  # a fragment from the middle
    "b'Bearer " + KEY + "\\n'",  # an HTTP library quoting the header it refused
])
def test_errors_never_show_any_part_of_a_key(shown: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = secrets.scrub_error(f"request rejected (403): Incorrect API key provided: {shown}.")
    assert out.startswith("request rejected (403): Incorrect API key provided: ")
    assert "[redacted" in out
    for i in range(len(KEY) - 7):
        assert KEY[i:i + 8] not in out


def test_key_shaped_tokens_are_scrubbed_even_when_unknown() -> None:
    text = "auth failed for ghp_ABCDEFGHIJKLMNOPQRSTUV1234 and Bearer abc.def-ghi_jkl"
    out = secrets.scrub_error(text, Secrets())
    assert "ghp_" not in out and "abc.def" not in out
    assert secrets.scrub_error("no keys here: 404 not found", Secrets()) == (
        "no keys here: 404 not found")


# ---- config show ------------------------------------------------------------------------------


def test_masking_by_name_and_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    data = {
        "providers": {"x": {"api_key_env": "X_KEY", "base_url": "http://h/v1",
                            "headers": {"Authorization": "Bearer s3cret",
                                        "X-Trace": KEY, "X-Other": "sk-ant-api03-abcdefghijkl"}}},
        "mcp": {"servers": {"gh": {"command": "npx", "env": {"GITHUB_PAT": "plainvalue",
                                                                "LOG_LEVEL": "debug"}}}},
        "tools": {"dirs": [f"/keys/{KEY}"]},
    }
    shown = secrets.mask_config(data)
    headers = shown["providers"]["x"]["headers"]
    assert shown["providers"]["x"]["api_key_env"] == "X_KEY"
    assert shown["providers"]["x"]["base_url"] == "http://h/v1"
    assert headers == {"Authorization": "****", "X-Trace": "****", "X-Other": "****"}
    assert shown["mcp"]["servers"]["gh"]["env"] == {"GITHUB_PAT": "****", "LOG_LEVEL": "debug"}
    assert shown["tools"]["dirs"] == ["****"]
    assert shown["mcp"]["servers"]["gh"]["command"] == "npx"
