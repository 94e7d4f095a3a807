"""The one secrets filter (tuiapp/security/redact): any 12 characters of a value, and the value
base64 (both alphabets, every alignment), hex and percent-encoded, whole or streamed, in hostile
shapes. Which egress applies it is test_secrets_egress.py."""

from __future__ import annotations

import base64
import json
import random
import re
from urllib.parse import quote

import pytest

from tuiapp.security import redact
from tuiapp.security.redact import WINDOW, Filter
from tuiapp.security.secrets import Secrets

KEY = "sk-proj-Zq8vR2mXw4Lp0Tn7Yb3Kc9Hd6Fs1Ja5Ge"
PAD = "ordinary words around it: "


def reg(**named: str) -> Secrets:
    return Secrets.of(named)


def leaks(text: str | bytes, value: str = KEY) -> list[str]:
    """Every 12-character piece of `value`, in any form the filter knows, found in `text`."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    found = []
    for form in redact.forms(value):
        for i in range(len(form) - WINDOW + 1):
            if form[i:i + WINDOW] in data:
                found.append(form[i:i + WINDOW].decode("latin-1"))
    return found


def stream_all(s: Secrets, chunks: list[bytes]) -> bytes:
    r = s.stream()
    return b"".join(r.feed(c) for c in chunks) + r.flush()


# ---- the observed failure: a read at an offset cut the key, and whole-value redaction missed it


@pytest.mark.parametrize("offset", [1, 2, 5, 16 % len(KEY), 20])
def test_a_key_cut_at_any_offset_is_still_redacted(offset: int) -> None:
    s = reg(OPENAI_API_KEY=KEY)
    for piece in (KEY[offset:], KEY[:len(KEY) - offset], KEY[offset:offset + WINDOW]):
        out = s.redact(f"{PAD}{piece}\n")
        assert piece not in out and not leaks(out), piece
        assert out == f"{PAD}[redacted OPENAI_API_KEY]\n"


def test_eleven_characters_are_not_a_window_and_stay() -> None:
    s = reg(OPENAI_API_KEY=KEY)
    piece = KEY[3:3 + WINDOW - 1]
    assert s.redact(f"x {piece} y") == f"x {piece} y"


def test_short_values_are_redacted_whole_only() -> None:
    s = reg(DB_PASSWORD="hunter2!x")  # 9 characters: between MIN_SECRET_LEN and WINDOW
    assert s.redact("pw=hunter2!x;") == "pw=[redacted DB_PASSWORD];"
    assert s.redact("pw=hunter2!") == "pw=hunter2!"


# ---- encodings ----------------------------------------------------------------------------------


def _encodings(value: str) -> dict[str, str]:
    raw = value.encode()
    pct = quote(value, safe="")
    out = {"hex": raw.hex(), "HEX": raw.hex().upper(), "percent": pct,
           "percent lower": re.sub("%..", lambda m: m.group().lower(), pct),
           "json": json.dumps(value)}
    for lead in (b"", b"a", b"ab", b"abc"):  # every alignment inside a longer blob
        blob = lead + b"KEY=" + raw + b"\nOTHER=1\n"
        out[f"base64 +{len(lead)}"] = base64.b64encode(blob).decode()
        out[f"urlsafe +{len(lead)}"] = base64.urlsafe_b64encode(blob).decode()
    return out


@pytest.mark.parametrize("value", [KEY, "p@ss/word+with=odd chars&more", "ключ-секрет-значение"])
def test_every_encoding_at_every_alignment_is_redacted(value: str) -> None:
    s = reg(SERVICE_SECRET=value)
    for name, encoded in _encodings(value).items():
        out = s.redact(f"{PAD}{encoded} end")
        assert "[redacted SERVICE_SECRET]" in out, name
        assert not leaks(out, value), name


def test_a_piece_of_the_base64_of_a_piece_is_redacted() -> None:
    s = reg(OPENAI_API_KEY=KEY)
    b64 = base64.b64encode(b"xx" + KEY[7:].encode()).decode()
    out = s.redact(b64[5:40])
    assert out == "[redacted OPENAI_API_KEY]"


def test_mime_base64_wrapped_every_76_characters() -> None:
    value = "".join(random.Random(3).choice("abcdefghijKLMNOP0123456789") for _ in range(300))
    s = reg(PRIVATE_KEY=value)
    b64 = base64.b64encode(("PRIVATE_KEY=" + value).encode()).decode()
    mime = "\n".join(b64[i:i + 76] for i in range(0, len(b64), 76))
    plain = "\n".join(value[i:i + 76] for i in range(0, len(value), 76))
    for wrapped in (mime, plain):
        out = s.redact(wrapped)
        for line in out.splitlines():  # what is left of a line is shorter than a window
            assert "[redacted PRIVATE_KEY]" in line or len(line) < WINDOW
        assert not leaks(out, value)


# ---- hostile shapes -----------------------------------------------------------------------------


def test_split_across_two_chunks_at_every_byte() -> None:
    s = reg(OPENAI_API_KEY=KEY)
    data = f"a{KEY[1:]} b {base64.b64encode(KEY.encode()).decode()}\n".encode()
    want = s.redact_bytes(data)
    assert not leaks(want)
    for cut in range(1, len(data)):
        assert stream_all(s, [data[:cut], data[cut:]]) == want, cut


def test_a_2mb_line_with_invalid_utf8_around_the_secrets() -> None:
    s = reg(OPENAI_API_KEY=KEY)
    rnd = random.Random(5)
    parts = []
    for _ in range(40):
        parts += [rnd.randbytes(50_000).replace(b"\n", b"."), b"\xff\xc3", KEY[rnd.randint(0, 9):]
                  .encode(), b"\xe2\x82", base64.b64encode(b"\x80" + KEY.encode())]
    line = b"".join(parts)
    assert len(line) > 2_000_000 and b"\n" not in line
    out = s.redact_bytes(line)
    assert not leaks(out)
    assert out.count(b"[redacted OPENAI_API_KEY]") == 80
    chunks = [line[i:i + 65536] for i in range(0, len(line), 65536)]
    assert stream_all(s, chunks) == out


def test_lone_surrogates_and_non_ascii_survive_the_round_trip() -> None:
    s = reg(OPENAI_API_KEY=KEY)
    text = "é\udcff" + KEY[2:] + "\udc80ж"
    assert s.redact(text) == "é\udcff[redacted OPENAI_API_KEY]\udc80ж"


def test_500_secrets_at_once() -> None:
    rnd = random.Random(9)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    named = {f"K{i}_TOKEN": "".join(rnd.choice(alphabet) for _ in range(32)) for i in range(500)}
    s = Secrets.of(named)
    body = bytearray(rnd.randbytes(1_500_000))
    for i, value in enumerate(list(named.values())[::25]):
        at = 50_000 + i * 70_000
        enc = [value[3:].encode(), value.encode().hex().encode(),
               base64.b64encode(b"q" + value.encode())][i % 3]
        body[at:at + len(enc)] = enc
    out = s.redact_bytes(bytes(body))
    pieces = {f[i:i + WINDOW] for v in named.values() for f in redact.forms(v)
              for i in range(len(f) - WINDOW + 1)}
    assert not any(out[i:i + WINDOW] in pieces for i in range(len(out) - WINDOW + 1))
    assert out.count(b"[redacted K") == 20


def test_stream_holds_back_only_what_could_be_a_secret() -> None:
    s = reg(OPENAI_API_KEY=KEY)
    r = s.stream()
    assert r.feed(b"progress 50%\n") == b"progress 50%\n"
    assert r.feed(b"value: sk-pro") == b"value: "
    assert r.feed(b"j-Zq8vR2mXw4") == b""  # a match that reaches the end is held whole
    assert r.feed(b"!\n") == b"[redacted OPENAI_API_KEY]!\n"
    assert r.flush() == b""


def test_no_values_no_work() -> None:
    f = Filter(())
    assert f.empty and f.redact("x" * 100) == "x" * 100
    assert f.stream().feed(b"sk-") == b"sk-"
