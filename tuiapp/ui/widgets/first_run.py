"""Shown at the top of a new chat on the offline model, until dismissed in that project: which
model is active, which tools were found, and how to set up a real provider. Dismiss with a
click on "Got it", Esc or a first message; it never blocks typing. The palette's "Show welcome"
brings it back."""

from __future__ import annotations

from collections.abc import Sequence

from textual import events
from textual.app import ComposeResult
from textual.await_remove import AwaitRemove
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Static

from tuiapp.conversation import project_marks
from tuiapp.security.display import printable_line
from tuiapp.settings.config_types import Config
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec

TOOLS_SHOWN = 12

CODE = "$text-accent"


def _code(text: str) -> tuple[str, str]:
    return (text, CODE)


def setup_text() -> Content:
    """How to configure a provider. Plain Content, not Markdown: this panel is on the first
    frame, and a Markdown widget (parse + a widget per block) would delay it."""
    providers = [
        ("OpenAI", "OPENAI_API_KEY", "openai/gpt-6.1-terra"),
        ("Anthropic", "ANTHROPIC_API_KEY", "anthropic/claude-sonnet-5-5"),
        ("OpenRouter", "OPENROUTER_API_KEY", "openrouter/VENDOR/MODEL"),
    ]
    parts: list[str | tuple[str, str]] = [("To use a real model", "bold"),
                                          ", give kep a key and pick a model:\n"]
    for name, key, model in providers:
        parts += [f"  • {name}: ", _code(f"export {key}=…"), " then ",
                  _code(f"kep --model {model}"), "\n"]
    parts += ["  • Local servers, no key: ", _code("kep --model ollama/llama3.2"), " (also ",
              _code("lmstudio/…"), ", ", _code("vllm/…"), ", ", _code("llamacpp/…"), ")\n\n",
              "Keys can also live in the project's ", _code(".env"),
              ". Make a model the default with ", _code('model = "openai/gpt-6.1-terra"'), " in ",
              _code("kep.toml"), ", or switch now: ", ("ctrl+p → Switch model", "bold"),
              ". Any other OpenAI- or Anthropic-compatible server: a ",
              _code("[providers.NAME]"), " table with ", _code("api"), ", ", _code("base_url"),
              " and ", _code("api_key_env"), "."]
    return Content.assemble(*parts)


class CloseLink(Static):
    """"Got it": a clickable label styled like a compact button (app.tcss). Not a Button: the
    panel is on the first frame, and Button's stylesheet is the largest of any widget there."""

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.query_ancestor(FirstRunPanel).dismiss()


class FirstRunPanel(Vertical):
    def __init__(self, config: Config) -> None:
        super().__init__(id="first-run")
        self.config = config

    def dismiss(self) -> AwaitRemove:
        """Put it away for good in this project (the palette's "Show welcome" still has it)."""
        project_marks.put("welcome-dismissed", self.config.project_root)
        return self.remove()

    def compose(self) -> ComposeResult:
        # Title and model line in one widget: every widget here delays the first frame.
        yield Static(self._intro("readfile README.md"), classes="first-run-intro")
        yield Static(Content("Looking for tools…"), classes="first-run-tools")
        yield Static(setup_text(), classes="first-run-setup")
        files = ", ".join(str(f) for f in self.config.files) or "none yet"
        with Horizontal(classes="first-run-footer"):
            yield Static(Content.assemble(("config files read: ", "$text-muted"), files),
                         classes="first-run-config")
            yield CloseLink("Got it  esc", id="first-run-close")

    def _intro(self, example: str) -> Content:
        keyed = any(p.api_key() for p in self.config.providers.values() if p.api_key_env)
        return Content.assemble(
            ("Welcome to kep", "bold $text-primary"),
            ("  ·  " + ("offline" if keyed else "no API key found"), "bold $text-muted"),
            "\n\nActive model: ", ("offline", "bold"),
            " — kep's built-in model: no network, no key. Name a tool and it runs it: ",
            (example, "bold $text-accent"), ".")

    def show_tools(self, entries: Sequence[ToolSpec | BrokenTool]) -> None:
        tools = sorted(e.name for e in entries if isinstance(e, ToolSpec))
        example = "readfile README.md" if "readfile" in tools or not tools else f"{tools[0]} …"
        self.query_one(".first-run-intro", Static).update(self._intro(example))
        broken = [e for e in entries if isinstance(e, BrokenTool)]
        if not tools and not broken:
            text = Content("No tools found. Add executables to prompts/functions/ (kep init "
                           "copies the built-in ones there).")
        else:
            names = printable_line(", ".join(tools[:TOOLS_SHOWN])) + (
                f" and {len(tools) - TOOLS_SHOWN} more" if len(tools) > TOOLS_SHOWN else "")
            parts: list[str | tuple[str, str]] = [
                f"Tools found ({len(tools)}): ", (names or "none", "$text-success")]
            if broken:
                parts += ["   ", (f"{len(broken)} broken", "bold $text-error"),
                          (" (ctrl+f shows why)", "$text-muted")]
            text = Content.assemble(*parts)
        self.query_one(".first-run-tools", Static).update(text)
