"""Inline `<think>…</think>` in a chat answer's text (DeepSeek-R1 style raw output: Groq,
Together, and most local servers running Qwen3 or R1 without a reasoning parser).

The thinking is reasoning, not answer. The tag counts only at the very start of the answer
(after blank space): a reply that mentions `<think>` later is just text. Tags may arrive split
across deltas; a thought still open when the stream ends is reasoning. Work per delta is
proportional to the delta: only a tag's length of text is ever held back.
"""

from __future__ import annotations

OPEN = "<think>"
CLOSE = "</think>"


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of `text` that is a beginning of `tag`."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0


class ThinkSplitter:
    """Feed content deltas; get (answer, thought) pieces back."""

    def __init__(self) -> None:
        self._state = "start"  # start → think → after → answer, or start → answer
        self._held = ""

    def feed(self, text: str) -> tuple[str, str]:
        if not text:
            return "", ""
        if self._state == "answer":
            return text, ""
        held = self._held + text
        self._held = ""
        if self._state == "start":
            head = held.lstrip()
            if not head or (len(head) < len(OPEN) and OPEN.startswith(head)):
                self._held = held  # blank so far, or maybe the start of the tag
                return "", ""
            if not head.startswith(OPEN):
                self._state = "answer"
                return held, ""
            self._state = "think"
            held = head[len(OPEN):]
        if self._state == "think":
            end = held.find(CLOSE)
            if end < 0:
                keep = _partial_suffix(held, CLOSE)
                self._held = held[len(held) - keep:]
                return "", held[:len(held) - keep]
            self._state = "after"
            thought, held = held[:end], held[end + len(CLOSE):]
            answer, _ = self.feed(held) if held else ("", "")
            return answer, thought
        # after: the blank lines between the thought and the answer are dropped
        held = held.lstrip()
        if held:
            self._state = "answer"
        return held, ""

    def end(self) -> tuple[str, str]:
        """What was held back when the stream ends: an unclosed thought is reasoning; a
        beginning that never became the tag is answer."""
        held, self._held = self._held, ""
        if self._state == "think":
            return "", held
        if self._state == "start" and held.strip():
            return held, ""
        return "", ""
