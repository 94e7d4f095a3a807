"""How long an MCP stdio server's one big line holds kep's event loop (issue 14).

    .venv/bin/python tests/bench/mcp_big_line.py [--mb 50 5 30] [--runs 3] [--sdk]

For each size: the call's wall time and the event loop's longest stall (a 5 ms ticker runs
during the call), median of the runs, through kep's transport; with --sdk also through the
mcp SDK's stdio_client in the same run (the baseline; its 50 MB case takes over 30 s).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import REPO, StallWatch, isolated_env

RAW = str(REPO / "tests" / "fakes" / "mcp_raw_server.py")


async def one(transport: Any, mb: float, char: str) -> tuple[float, float, str]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[RAW])
    async with Client(transport(params, errlog=sys.stderr), mode="legacy",
                      read_timeout_seconds=300) as client:
        watch = StallWatch()
        watch.start()
        start = time.perf_counter()
        try:
            result = await client.call_tool("big", {"mb": mb, "char": char})
            outcome = f"{len(result.content[0].text) / 2**20:.1f} M characters of text"
        except Exception as e:
            outcome = f"error: {e}"
        took = time.perf_counter() - start
        watch.stop()
        return took, watch.worst, outcome


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=float, nargs="+", default=[50, 5, 30])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--char", default="x", help='what the text is made of (\'"\': all escapes)')
    p.add_argument("--sdk", action="store_true", help="also measure the SDK's stdio_client")
    opts = p.parse_args()
    isolated_env(Path(tempfile.mkdtemp(prefix="kep-bench-")))
    from mcp.client.stdio import stdio_client

    from tuiapp.mcp.stdio_transport import stdio_transport

    transports = [("kep", stdio_transport)] + ([("sdk", stdio_client)] if opts.sdk else [])
    for mb in opts.mb:
        for name, transport in transports:
            runs = [asyncio.run(one(transport, mb, opts.char)) for _ in range(opts.runs)]
            took = statistics.median(r[0] for r in runs)
            stall = statistics.median(r[1] for r in runs)
            print(f"{name} {mb:g} MB line: call {took:.2f} s, longest loop stall "
                  f"{stall * 1000:.0f} ms (median of {opts.runs}); {runs[0][2]}", flush=True)


if __name__ == "__main__":
    main()
