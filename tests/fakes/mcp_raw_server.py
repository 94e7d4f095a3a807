"""A raw JSON-RPC MCP stdio server that writes its answers byte by byte as a test asks.

No SDK: what goes to stdout is exactly what the tests need to hit kep's line reader with.
`--big-list MB` answers the first tools/list with one line of that many MB (later ones are
normal). Tool calls ("echo" answers normally; the others misbehave):
  big {"mb": N, "id_last": bool, "char": c}  a line of N MB of c (JSON-escaped: '"' is 2 bytes)
                                   with the id first, or last as some SDKs put it
  image {"mb": N}                  an image result of N MB of base64
  dribble {"text": s}              the answer in 1- to 7-byte writes
  bad_utf8 {}                      an answer holding a byte that is not UTF-8
  burst {"n": N}                   N log notifications and then the answer, in one write
  no_newline {}                    half an answer without a newline, then exit
  env {"name": s}, cwd {}, pids {} a variable of its environment, its cwd, its and its child's pid
`--deaf` ignores SIGTERM and the end of its stdin, and starts a child (`sleep`) in its group.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

OUT = sys.stdout.buffer
TOOLS = [{"name": n, "description": n, "inputSchema": {"type": "object"}}
         for n in ("echo", "big", "image", "dribble", "bad_utf8", "burst", "no_newline", "env",
                   "cwd", "pids")]
CHILD: list[int] = []


def write(data: bytes) -> None:
    OUT.write(data)
    OUT.flush()


def line(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg, separators=(",", ":")).encode() + b"\n"


def result(rid: Any, value: dict[str, Any]) -> bytes:
    return line({"jsonrpc": "2.0", "id": rid, "result": value})


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def big_line(rid: Any, mb: float, id_last: bool = False, key: str = "text", char: str = "x"
             ) -> bytes:
    filler = char * int(mb * 1024 * 1024 / len(json.dumps(char)[1:-1].encode()))
    if id_last:  # {"result":…,"jsonrpc":"2.0","id":N}, the order the TypeScript SDK writes
        body = {"result": text_result(filler), "jsonrpc": "2.0", "id": rid}
        return json.dumps(body, separators=(",", ":")).encode() + b"\n"
    if key == "tools":
        return result(rid, {"tools": [{"name": "huge", "description": filler,
                                       "inputSchema": {"type": "object"}}]})
    return result(rid, text_result(filler))


def call(rid: Any, name: str, args: dict[str, Any]) -> None:
    if name == "echo":
        write(result(rid, text_result(str(args.get("text", "")))))
    elif name == "big":
        write(big_line(rid, float(args.get("mb", 50)), bool(args.get("id_last")),
                       char=str(args.get("char", "x"))))
    elif name == "image":
        data = base64.b64encode(b"\x89PNG\r\n\x1a\n" + os.urandom(int(args.get("mb", 5) * 2**20)))
        write(result(rid, {"content": [{"type": "image", "data": data.decode()[: int(
            args.get("mb", 5) * 2**20)], "mimeType": "image/png"}]}))
    elif name == "dribble":
        data, i = result(rid, text_result(str(args.get("text", "")))), 0
        while i < len(data):
            step = 1 + i % 7
            write(data[i:i + step])
            i += step
            time.sleep(0.0005)
    elif name == "bad_utf8":
        write(b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode()
              + b',"result":{"content":[{"type":"text","text":"caf\xe9 \xff"}]}}\n')
    elif name == "burst":
        n = int(args.get("n", 500))
        notes = b"".join(line({"jsonrpc": "2.0", "method": "notifications/message",
                               "params": {"level": "info", "data": f"note {i}"}})
                         for i in range(n))
        write(notes + result(rid, text_result(f"after {n} notes")))
    elif name == "env":
        write(result(rid, text_result(os.environ.get(str(args.get("name")), "<unset>"))))
    elif name == "cwd":
        write(result(rid, text_result(os.getcwd())))
    elif name == "pids":
        write(result(rid, text_result(" ".join(map(str, [os.getpid(), *CHILD])))))
    elif name == "no_newline":
        write(result(rid, text_result("cut off"))[:20])
        os._exit(0)


def main() -> None:
    if "--deaf" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        CHILD.append(subprocess.Popen(["sleep", "60"]).pid)
    big_list = float(sys.argv[sys.argv.index("--big-list") + 1]) if "--big-list" in sys.argv else 0
    for raw in sys.stdin.buffer:
        msg = json.loads(raw)
        rid, method = msg.get("id"), msg.get("method")
        if rid is None:
            continue  # a notification (initialized, cancelled)
        if method == "initialize":
            write(result(rid, {"protocolVersion": msg["params"]["protocolVersion"],
                               "capabilities": {"tools": {}, "logging": {}},
                               "serverInfo": {"name": "raw", "version": "1"}}))
        elif method == "tools/list":
            if big_list:
                write(big_line(rid, big_list, key="tools"))
                big_list = 0
            else:
                write(result(rid, {"tools": TOOLS}))
        elif method == "tools/call":
            call(rid, msg["params"]["name"], msg["params"].get("arguments") or {})
        else:
            write(line({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601,
                                                               "message": "no such method"}}))
    if "--deaf" in sys.argv:
        time.sleep(3600)


if __name__ == "__main__":
    main()
