"""Images in tool results: which ones may go to the model, checked once when they arrive.

A tool (an MCP server) says what an image is; kep believes its bytes instead. An image is sent
only when its base64 decodes, its first bytes are those of a png, jpeg, gif or webp (the four
types both image-taking APIs accept) and it fits the caps below. Everything else becomes a
short placeholder saying why, in the result's text; base64 never becomes text. No textual here.
"""

from __future__ import annotations

import base64
import binascii
import re

from tuiapp.vocab.messages import ToolImage, human_size

# Anthropic refuses an image whose base64 exceeds 5 MB; the cap is on the encoded size, so
# one limit serves both APIs (OpenAI takes more).
MAX_IMAGE_B64 = 5 * 1024 * 1024
MAX_IMAGES = 8  # per tool result: every later request of the session carries them again
MAX_RESULT_B64 = 16 * 1024 * 1024  # all images of one result together
_SPACE = re.compile(r"\s+")


def sniff(raw: bytes) -> str | None:
    """The image type of these bytes, by their signature, or None."""
    if raw.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if raw.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if raw.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return None


def estimated_size(data: str) -> int:
    data = data.strip()
    return max(0, len(data) * 3 // 4 - data[-2:].count("="))


class ImageBudget:
    """Decides, image by image, what one tool result may send."""

    def __init__(self) -> None:
        self.sent = 0
        self.sent_b64 = 0
        self.over_count = 0  # images left out because MAX_IMAGES were already taken

    def take(self, declared: str, data: object) -> ToolImage | str:
        """A ToolImage to send, or the placeholder text saying why it is not sent."""
        declared = declared if isinstance(declared, str) else "?"
        label = declared[:60] if declared.isprintable() else "?"
        if not isinstance(data, str):
            return f"[image: {label} — not sent: no data]"
        if len(data) <= 2 * MAX_IMAGE_B64:  # (a 20 MB string is refused without a scan)
            data = _SPACE.sub("", data)  # line-wrapped base64 is still base64
        size = estimated_size(data)
        if len(data) > MAX_IMAGE_B64:
            return (f"[image: {label}, {human_size(size)} — not sent: larger than the "
                    f"{human_size(MAX_IMAGE_B64 * 3 // 4)} kep sends per image]")
        if self.sent >= MAX_IMAGES:
            self.over_count += 1
            return ""  # summarised once, by overflow_note
        if self.sent_b64 + len(data) > MAX_RESULT_B64:
            return (f"[image: {label}, {human_size(size)} — not sent: the images of this "
                    f"result already reach {human_size(MAX_RESULT_B64 * 3 // 4)}]")
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return f"[image: {label} — not sent: its data is not valid base64]"
        kind = sniff(raw)
        if kind is None:
            return (f"[image: {label}, {human_size(len(raw))} — not sent: its bytes are not a "
                    "png, jpeg, gif or webp image]")
        self.sent += 1
        self.sent_b64 += len(data)
        # Re-encoded from the bytes: the API gets canonical base64 whatever the server sent.
        return ToolImage(kind, base64.b64encode(raw).decode("ascii"), len(raw))

    def overflow_note(self) -> str:
        if not self.over_count:
            return ""
        return (f"[{self.over_count} more image{'s' * (self.over_count != 1)} not sent: kep "
                f"sends at most {MAX_IMAGES} images per tool result]")
