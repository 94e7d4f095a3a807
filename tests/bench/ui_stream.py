"""Streaming a long markdown reply into the headless TUI vs the bare SDK reading the same stream.

    python tests/bench/ui_stream.py [--api anthropic|chat|responses] [--sizes 20000 40000]
                                    [--rounds 5]

The loopback fake server (tests/fakes/llm_server.py, run as its own process like a remote API)
streams N tokens of markdown (headings, paragraphs, lists, code fences; one token per delta) as
fast as it can. For each N, `rounds` times, SDK and app alternating (medians are compared):
  - the bare SDK consumes the stream: time from the first to the last text delta;
  - kep's app (make_app, App.run_test, 120x40, recording the session as `kep` does; the
    prompt is sent a second after start, as a person would) shows it: time from the first
    text reaching the UI to the reply fully shown (turn ended, reply drawn, UI idle);
  - while the app streams, a key is typed into the prompt every 100 ms, as the terminal driver
    would send it; latency = key sent → the prompt's Changed message handled.
Targets: app/SDK <= 2.0; app 40k/20k <= 2.3 (linear); keypress p95 <= 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from _common import REPO, KeyTypist, isolated_env, median, p95, send_key, temp_home, verdict
from fakes.llm_server import FakeLLMProcess

KEY_ENV = "KEP_BENCH_KEY"


def markdown_tokens(n: int) -> list[str]:
    """A plausible long answer, one token (about a word) per delta."""
    words = ["the", "registry", "lists", "every", "tool", "once", "and", "caches", "the",
             "result", "so", "that", "a", "second", "start", "reads", "it", "back", "without",
             "running", "anything", "which", "keeps", "startup", "fast", "even", "with", "many",
             "tools", "in", "the", "project"]
    out: list[str] = []
    section = 0
    while len(out) < n:
        section += 1
        out += ["## ", "Section ", f"{section}\n\n"]
        out += [w + " " for w in (words * 2)[:60]] + ["\n\n"]
        for item in range(5):
            out += ["- ", "**item** ", *[w + " " for w in words[item:item + 8]], "\n"]
        out.append("\n")
        if section % 3 == 0:
            out.append("```python\n")
            for line in range(6):
                out += ["value", f"_{line} ", "= ", "compute(", f"{line})\n"]
            out.append("```\n\n")
    return out[:n]


def sdk_factory(api: str, base_url: str) -> Any:
    if api == "anthropic":
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(base_url=base_url, api_key="bench", max_retries=0)
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)


async def sdk_consume(api: str, base_url: str) -> float:
    """First → last text delta, as a bare SDK client would read them."""
    client = sdk_factory(api, base_url)
    parts: list[str] = []
    first = last = 0.0
    try:
        if api == "anthropic":
            stream = await client.messages.create(
                model="bench", max_tokens=100_000, stream=True,
                messages=[{"role": "user", "content": "go"}])
            async for event in stream:
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    last = time.perf_counter()
                    first = first or last
                    parts.append(event.delta.text)
        elif api == "chat":
            stream = await client.chat.completions.create(
                model="bench", stream=True, messages=[{"role": "user", "content": "go"}])
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    last = time.perf_counter()
                    first = first or last
                    parts.append(chunk.choices[0].delta.content)
        else:
            stream = await client.responses.create(model="bench", input="go", stream=True)
            async for event in stream:
                if event.type == "response.output_text.delta":
                    last = time.perf_counter()
                    first = first or last
                    parts.append(event.delta)
    finally:
        await client.close()
    return last - first


async def app_consume(project: Path) -> tuple[float, list[float], int]:
    """(first text in the UI → reply shown, keypress latencies, reply length shown)."""

    from tuiapp.conversation.store import Store
    from tuiapp.project import config as project_config
    from tuiapp.project.workspace import Workspace
    from tuiapp.ui.app import make_app
    from tuiapp.ui.messages import CoreEvent, ReplyText
    from tuiapp.ui.widgets.transcript import Transcript
    from tuiapp.vocab.events import TurnEnded

    ws = Workspace(project_config.load(project))
    store = Store.open()  # as `kep` runs: the session is recorded while it streams
    app = make_app(ws, model="fake/bench", store=store)
    marks: dict[str, float] = {}
    keys = KeyTypist(app)
    ended = asyncio.Event()

    def hook(message: Any) -> None:
        now = time.perf_counter()
        if isinstance(message, ReplyText):
            marks.setdefault("first", now)
        elif isinstance(message, CoreEvent) and isinstance(message.event, TurnEnded):
            marks.setdefault("ended", now)
            ended.set()
        keys.seen(message)

    async def typist() -> None:
        # The next key in 100 ms, unless the turn ends first.
        await keys.type_until(lambda: "ended" in marks, stop=ended)

    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await app.tools_ready.wait()
        # A person types the question a second or more after the screen appears; kep uses
        # that idle time (Markdown warm-up). Then the screen is settled.
        await asyncio.sleep(1.0)
        await pilot.pause()
        await pilot.press(*"go")
        send_key(app, "enter", "\r")  # not pilot.press: it would wait for the whole reply
        typing = asyncio.create_task(typist())  # from the request on, until the turn ends
        await ended.wait()
        await typing
        transcript = app.query_one(Transcript)
        while not transcript.drawn:  # the reply's last text has reached its Markdown
            await asyncio.sleep(0.005)
        await pilot.pause()  # and is laid out and drawn
        shown = time.perf_counter() - marks["first"]
        reply = sum(len(m.content) for m in app.chat.history if m.role == "assistant")
    store.close()
    return shown, keys.latencies, reply


def write_project(root: Path, api: str, base_url: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "prompts").mkdir(exist_ok=True)
    (root / "kep.toml").write_text(
        f'[providers.fake]\napi = "{api}"\nbase_url = "{base_url}"\napi_key_env = "{KEY_ENV}"\n'
        '[tools]\nbuiltins = false\n')
    return root


async def main_async(args: argparse.Namespace) -> int:
    home = temp_home("kep-bench-stream-")
    isolated_env(home)
    import os

    os.environ[KEY_ENV] = "bench"
    script = []
    for n in args.sizes:
        reply = {"text": markdown_tokens(n)}
        script += [reply, reply] * args.rounds  # SDK then app, `rounds` times
    results: dict[int, dict[str, list[float]]] = {n: {"sdk": [], "app": [], "keys": []}
                                                  for n in args.sizes}
    with FakeLLMProcess(script, home / "server") as server:
        project = write_project(home / "project", args.api, server.base_url)
        for n in args.sizes:
            for _ in range(args.rounds):
                results[n]["sdk"].append(await sdk_consume(args.api, server.base_url))
                shown, keys, length = await app_consume(project)
                results[n]["app"].append(shown)
                results[n]["keys"] += keys
                print(f"  {n} tokens: sdk {results[n]['sdk'][-1]:.2f} s, app {shown:.2f} s, "
                      f"{len(keys)} keys, reply {length:,} chars", flush=True)

    print(f"\nstreaming markdown, {args.api} API, median of {args.rounds} run(s)")
    app_time: dict[int, float] = {}
    ok = True
    for n in args.sizes:
        sdk, app = median(results[n]["sdk"]), median(results[n]["app"])
        app_time[n] = app
        keys = results[n]["keys"]
        ratio = app / sdk
        ok_ratio, ok_keys = ratio <= 2.0, p95(keys) * 1000 <= 50
        ok = ok and ok_ratio and ok_keys
        print(f"{n:>6} tokens: SDK {sdk:6.2f} s   app {app:6.2f} s   app/SDK {ratio:5.2f} "
              f"(<= 2.0: {verdict(ok_ratio)})   keypress p95 {p95(keys) * 1000:6.1f} ms "
              f"over {len(keys)} keys (<= 50 ms: {verdict(ok_keys)})")
    if len(args.sizes) >= 2:
        small, big = args.sizes[0], args.sizes[-1]
        growth = app_time[big] / app_time[small]
        print(f"app {big}/{small} time ratio: {growth:.2f} (<= 2.3: {verdict(growth <= 2.3)})")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", choices=("anthropic", "chat", "responses"), default="anthropic")
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 40_000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    _ = REPO
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    raise SystemExit(main())
