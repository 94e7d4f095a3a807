"""Why an MCP server did not start or stopped, in words a user can act on: the exit status or
signal of a stdio server (it runs under a tiny `sh` that notes how its command ended), the
HTTP status of a url server (401: credentials), and the last lines of its stderr.
"""

from __future__ import annotations

import os
import shutil
import signal

EXIT_MARK = "# kep: exit status "

# `sh -c` runs the server as its child, in the same process group (which the SDK kills as a
# whole), and appends how it ended to stderr, i.e. to the server's log.
_WRAP = f'"$@"; s=$?; echo "{EXIT_MARK}$s" >&2; exit $s'


def wrapped_command(command: str, args: list[str], path: str | None = None
                    ) -> tuple[str, list[str]]:
    """(command, args) that run the server and record its exit status. Raises
    FileNotFoundError for a command that is not installed (as spawning it would)."""
    if shutil.which(command, path=path) is None and not os.access(command, os.X_OK):
        raise FileNotFoundError(command)
    if os.name != "posix" or not os.access("/bin/sh", os.X_OK):
        return command, args
    return "/bin/sh", ["-c", _WRAP, "kep-mcp", command, *args]


def exit_description(log_text: str) -> str:
    """"exit status 3" / "killed by signal 9 (SIGKILL)" from the log, or ""."""
    for line in reversed(log_text.splitlines()):
        if line.startswith(EXIT_MARK):
            try:
                code = int(line[len(EXIT_MARK):].strip())
            except ValueError:
                return ""
            if code > 128:
                try:
                    name = f" ({signal.Signals(code - 128).name})"
                except ValueError:
                    name = ""
                return f"killed by signal {code - 128}{name}"
            return f"exit status {code}"
    return ""


class StartRefused(Exception):
    """kep will not start the server as configured; the message says why."""


def http_status(error: BaseException) -> int | None:
    """The HTTP status behind a failed start of a url server, however the SDK wrapped it."""
    seen = 0
    cur: BaseException | None = error
    while cur is not None and seen < 10:
        response = getattr(cur, "response", None)
        code = getattr(response, "status_code", None)
        if isinstance(code, int):
            return code
        text = str(cur)
        for marker in ("401 Unauthorized", "HTTP 401", "status code 401", "'401"):
            if marker in text:
                return 401
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return None
