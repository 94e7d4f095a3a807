"""The workbench's output log: tool output shown, never obeyed, and bounded.

Escape and control characters are made visible; lines are folded at LINE_FOLD characters (a
growing line is measured again on every write, so a 2 MB line would cost quadratic time);
at most LOG_CAP characters a run are shown, then one note says so.
"""

from __future__ import annotations

from textual.widgets import Log

LOG_CAP = 256 * 1024  # characters of one run shown in the log
LINE_FOLD = 2000  # a longer line is folded


def printable(text: str) -> str:
    """Foreign text with control characters (ESC, BEL, …) as visible escapes."""
    return "".join(c if c.isprintable() or c in "\n\t" else repr(c)[1:-1] for c in text)


class RunLog(Log):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, highlight=False)
        self.reset()

    def reset(self) -> None:
        """A new run (or a view of an old one): empty, uncapped."""
        self.clear()
        self.stream = "stdout"
        self._col = 0  # length of the last line, when it has no newline yet
        self._shown = 0  # characters written since the reset

    def put(self, text: str) -> None:
        text = printable(text)
        if not text or self._shown > LOG_CAP:
            return
        room = LOG_CAP - self._shown
        capped = len(text) > room
        text = text[:room]
        self._shown += len(text) + (1 if capped else 0)  # past the cap: nothing more
        out: list[str] = []
        for piece in text.splitlines(keepends=True):
            while self._col + len(piece.rstrip("\n")) > LINE_FOLD:
                take = LINE_FOLD - self._col
                out += [piece[:take], "\n"]
                piece, self._col = piece[take:], 0
            out.append(piece)
            self._col = 0 if piece.endswith("\n") else self._col + len(piece)
        if capped:
            out.append(f"\n… output cut at {LOG_CAP // 1024} KiB here (Send and diff use the "
                       "run's whole result)\n")
            self._col = 0
        self.write("".join(out))

    def mark(self, what: str) -> None:
        """A header line (── stderr ──) on a line of its own."""
        self.put(("\n" if self._col else "") + f"── {what} ──\n")

    def put_stream(self, stream: str, text: str) -> None:
        """Streamed output; a header where it switches between stdout and stderr."""
        if stream != self.stream:
            self.stream = stream
            self.mark(stream)
        self.put(text)
