"""Cost of the secrets filter (tuiapp/security/redact) on a 10 MB tool output.

For several kinds of output (prose, code-like lines, one 10 MB base64 line, random bytes) and
5 or 500 secrets, prints the milliseconds the filter takes (whole, and streamed in 64 KiB
chunks) next to a baseline measured in the same run: one `bytes.find` of one value over the
same 10 MB (a plain scan, the least any filter must do), and the old filter's regex of whole
values. The figure to watch is the ratio to the plain scan (the machine's load moves both).
Also the time to build the index. Run: .venv/bin/python tests/bench/redact.py
"""

from __future__ import annotations

import base64
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tuiapp.security.redact import Filter

SIZE = 10_000_000
CHUNK = 65536


def best(f: Callable[[], object], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times) * 1000


def outputs(rnd: random.Random) -> dict[str, bytes]:
    text = ("the of and a to in is you that it he was for on are as with his they I at be this "
            "have from or one had by word but not what all were we when your can said there use "
            "an each which she do how their if will up other about out many then them these so "
            "some her would make like him into time has look two more write go see number no "
            "way could people my than first water been call who oil its now find long down day")
    words = [w.encode() for w in text.split(" ")]
    prose = b" ".join(rnd.choice(words) for _ in range(SIZE // 4))[:SIZE]
    line = b"    result = compute_value(item.identifier, options=DEFAULTS)  # step 42\n"
    code = (line * (SIZE // len(line) + 1))[:SIZE]
    blob = base64.b64encode(rnd.randbytes(SIZE * 3 // 4))[:SIZE]
    return {"prose": prose, "code": code, "base64 line": blob, "random bytes": rnd.randbytes(SIZE)}


def main() -> None:
    rnd = random.Random(1)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    for count in (5, 500):
        values = [("sk-" + "".join(rnd.choice(alphabet) for _ in range(40)), f"KEY_{i}")
                  for i in range(count)]
        t = time.perf_counter()
        f = Filter(values)
        built = (time.perf_counter() - t) * 1000
        old = re.compile(b"|".join(re.escape(v.encode()) for v, _ in values))
        print(f"\n{count} secrets: index built in {built:.0f} ms "
              f"({len(f.index.windows)} windows, {len(f.index.grams)} grams)")
        print(f"  {'output (10 MB)':14} {'plain find':>10} {'old regex':>10} {'filter':>9} "
              f"{'streamed':>9} {'ratio':>6}")
        ratios = []
        for name, data in outputs(rnd).items():
            probe = values[0][0].encode()
            plain = best(lambda d=data, p=probe: d.find(p))
            oldt = best(lambda d=data, o=old: o.search(d))
            whole = best(lambda d=data, g=f: g.redact_bytes(d))

            def streamed(d: bytes = data, g: Filter = f) -> None:
                s = g.stream()
                for i in range(0, len(d), CHUNK):
                    s.feed(d[i:i + CHUNK])
                s.flush()

            stream = best(streamed, 1)
            ratios.append(whole / plain)
            print(f"  {name:14} {plain:8.1f}ms {oldt:8.1f}ms {whole:7.1f}ms {stream:7.1f}ms "
                  f"{whole / plain:5.1f}x")
        print(f"  median ratio filter / plain scan: {statistics.median(ratios):.1f}x")
    # A secret is found where it hides: check the figures above measure real work.
    key = values[7][0].encode()
    data = outputs(rnd)["base64 line"]
    data = data[:SIZE // 2] + base64.b64encode(b"x" + key) + data[SIZE // 2:]
    assert f"[redacted {values[7][1]}]".encode() in f.redact_bytes(data)


if __name__ == "__main__":
    main()
