"""Cost of recording a streamed reply: one commit per TextDelta (WAL, synchronous=NORMAL).

Prints µs per delta for the store, for the same store with synchronous=FULL (what fsync per
commit would cost), and for a baseline measured in the same run: serialising the event as
`kep run --json` does. Run: .venv/bin/python tests/bench/store_bench.py
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from tuiapp.conversation.store import Store
from tuiapp.vocab.events import MessageAdded, TextDelta
from tuiapp.vocab.messages import Message

N = 3000


def per_delta(store: Store, sid: str) -> float:
    deltas = [TextDelta(f"word{i} ") for i in range(N)]
    t = time.perf_counter()
    for d in deltas:
        store.record(sid, d)
    elapsed = time.perf_counter() - t
    store.record(sid, MessageAdded(Message("assistant", "".join(d.text for d in deltas))))
    return elapsed / N * 1e6


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "normal.db")
        normal = per_delta(store, store.create_session(tmp, "bench"))
        full_store = Store.open(Path(tmp) / "full.db")
        full_store._db.execute("PRAGMA synchronous=FULL")
        full = per_delta(full_store, full_store.create_session(tmp, "bench"))
    t = time.perf_counter()
    for i in range(N):
        json.dumps(TextDelta(f"word{i} ").to_json())
    baseline = (time.perf_counter() - t) / N * 1e6
    print(f"record TextDelta, synchronous=NORMAL: {normal:8.1f} µs/delta "
          f"({normal / baseline:.1f}x the --json baseline)")
    print(f"record TextDelta, synchronous=FULL:   {full:8.1f} µs/delta "
          f"({full / normal:.1f}x NORMAL)")
    print(f"baseline: Event.to_json + json.dumps: {baseline:8.1f} µs/delta")


if __name__ == "__main__":
    main()
