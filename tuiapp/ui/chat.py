"""One chat as the app holds it: model, provider, session record, runner and conversation.

No widgets here: the app owns a ChatSession and runs `send`/`retry` in a worker; everything
the user sees comes back through the `sink` callback as core events.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from importlib import import_module

from tuiapp.conversation import mentions, session_admin
from tuiapp.conversation.conversation import Approval, Approver, Conversation
from tuiapp.conversation.recorder import OrderedRecorder, SessionRecorder
from tuiapp.conversation.store import Store
from tuiapp.conversation.store_schema import StoreError
from tuiapp.project.session_start import StartPlan
from tuiapp.project.workspace import Workspace
from tuiapp.providers import ModelError, make_provider, resolve_model
from tuiapp.providers.base import Provider, ProviderFailure, StreamItem
from tuiapp.security.policy import Verdict
from tuiapp.settings.config_types import Config
from tuiapp.tools.runner import Runner
from tuiapp.vocab.events import Event, Notice, ToolCallStarted, ToolFinished
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

Sink = Callable[[Event], None]


class LazyProvider(Provider):
    """A provider whose SDK is imported in a thread, after the first frame.

    The name is checked at once (resolve_model, no import) so a bad --model fails before the
    app starts; `preload()` builds the real provider in the background, and the first request
    waits for it if it is not there yet."""

    def __init__(self, config: Config, name: str) -> None:
        pc, model = resolve_model(config, name)
        super().__init__(pc, model)
        self._cfg, self._name = config, name
        self._real: Provider | None = None
        self._loading: asyncio.Future[Provider] | None = None

    @property
    def label(self) -> str:
        return "offline" if self.config.api == "offline" else f"{self.config.name}/{self.model}"

    def preload(self) -> None:
        if self._loading is None and self._real is None:
            self._loading = asyncio.ensure_future(
                asyncio.to_thread(_build_provider, self._cfg, self._name))

    async def loaded(self) -> None:
        """Until the preload has finished (or failed: the first stream reports that)."""
        if self._loading is not None:
            await asyncio.wait([self._loading])

    async def _get(self) -> Provider:
        if self._real is None:
            self.preload()
            assert self._loading is not None
            try:
                self._real = await self._loading
            except ModelError as e:
                self._loading = None
                raise ProviderFailure(str(e)) from None
            except Exception as e:  # an SDK that fails to import: say so, keep the app alive
                self._loading = None
                raise ProviderFailure(f"cannot load the {self.config.name} provider: {e}") from e
        return self._real

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                     system: str | None) -> AsyncIterator[StreamItem]:
        real = await self._get()
        # the palette sets them here
        real.reasoning, real.temperature = self.reasoning, self.temperature
        real.max_output_tokens = self.max_output_tokens
        async for item in real.stream(messages, tools, system):
            yield item

    async def aclose(self) -> None:
        if self._real is not None:
            await self._real.aclose()


# The SDK each wire protocol needs. Providers import it on first use, on the event loop (about
# a second for anthropic); importing it here, in the preload thread, keeps the first send smooth.
SDK_MODULES = {"responses": "openai", "chat": "openai", "anthropic": "anthropic"}


def _build_provider(config: Config, name: str) -> Provider:
    provider = make_provider(config, name)
    sdk = SDK_MODULES.get(provider.config.api)
    if sdk:
        try:
            import_module(sdk)
        except ImportError:
            pass  # the provider reports it, with its own words, when it is used
    return provider


class ChatSession:
    """The session the app shows. The store record and runner are created on the first send,
    so opening kep and quitting leaves no empty session behind."""

    def __init__(self, ws: Workspace, *, model: str, sink: Sink, approver: Approver,
                 store: Store | None = None, session_id: str | None = None,
                 history: Sequence[Message] = (), provider: Provider | None = None) -> None:
        self.ws = ws
        self.model = model
        self.store = store
        self.session_id = session_id
        self._history = list(history)
        self.provider: Provider = provider or LazyProvider(ws.config, model)
        self._sink = sink
        self._approver = approver
        self._recorder: OrderedRecorder | None = None
        self.conversation: Conversation | None = None
        self.runner: Runner | None = None
        self.running: dict[str, str] = {}  # call id → tool name, for cancel
        self._retired: list[Provider] = []  # replaced by switch_model; closed in close()
        if store is not None:
            session_admin.remember_open(ws.root, session_id)  # what `--continue` reopens

    @property
    def history(self) -> list[Message]:
        """The messages so far (the conversation's own list once it exists)."""
        return self.conversation.history if self.conversation else self._history

    def emit(self, event: Event) -> None:
        if isinstance(event, ToolCallStarted):
            self.running[event.call_id] = event.name
        elif isinstance(event, ToolFinished):
            self.running.pop(event.call_id, None)
        # Record first: whatever the user sees is already on disk (a huge event is written
        # by a thread and shown once it is, see OrderedRecorder).
        if self._recorder is not None:
            self._recorder.record(event, lambda: self._sink(event))
        else:
            self._sink(event)

    async def _ask(self, call: ToolCall, spec: ToolSpec, verdict: Verdict) -> Approval:
        """The approver, asked only once the events before the question are shown."""
        if self._recorder is not None:
            await self._recorder.settled()
        return await self._approver(call, spec, verdict)

    def settle(self) -> None:
        """Block until every event is on disk (before the session is read, or let go)."""
        if self._recorder is not None:
            self._recorder.drain()

    def _conversation(self) -> Conversation:
        if self.conversation is None:
            self._open_record()
            spool_id = self.session_id or f"unsaved-{uuid.uuid4().hex[:8]}"
            self.runner = runner = self.ws.runner(spool_id)
            self.conversation = self.ws.conversation(
                self.provider, runner, self._ask, self.emit, self._history)
            # "Deny all" given while later calls of the reply were not reached yet.
            self.conversation.standing = getattr(self._approver, "standing", None)
        return self.conversation

    def _open_record(self) -> None:
        if self.store is None:
            return
        try:
            if self.session_id is None:
                self.session_id = self.store.create_session(self.ws.root, self.model)
                session_admin.remember_open(self.ws.root, self.session_id)
            self._recorder = OrderedRecorder(
                SessionRecorder(self.store, self.session_id, on_error=self._store_failed),
                asyncio.get_running_loop())
        except (StoreError, sqlite3.Error, LookupError) as e:  # never lose the chat to it
            self._store_failed(f"this chat is not being saved: {e}")

    def _store_failed(self, message: str) -> None:
        self._sink(Notice(message, "error"))  # (the recorder records nothing more)

    def preload(self) -> None:
        """Build the provider in the background (after the first frame, once tools are in)."""
        if isinstance(self.provider, LazyProvider):
            self.provider.preload()

    async def preloaded(self) -> None:
        if isinstance(self.provider, LazyProvider):
            await self.provider.loaded()

    async def send(self, text: str) -> str:
        got = await mentions.attach_for(text, self.ws.root, self.ws.mcp,
                                        takes_images=self.provider.config.api != "offline",
                                        model=self.provider.label)
        for note in got.notes:  # one line each; the message is still sent
            self._sink(Notice(note, "warning"))
        return await self._conversation().turn(text, attachments=got.attachments)

    async def start(self, plan: StartPlan) -> str:
        """Run a `.prompt` file's statements in this chat (core.session_start)."""
        return await plan.start(self._conversation())

    async def retry(self) -> str:
        return await self._conversation().retry()

    def apply_config(self, cfg: Config) -> str | None:
        """A new config for this chat (hot reload, or the project trusted again): the
        runner's limits, the step cap and, when its settings changed, the provider. Returns a
        problem to report, or None."""
        if self.runner is not None:
            self.runner.reconfigure(cfg)  # timeouts, output cap
        if self.conversation is not None:
            self.conversation.max_steps = cfg.max_steps
        if not isinstance(self.provider, LazyProvider):
            return None  # a provider handed in by a test or a script: not ours to replace
        try:
            provider_config, _model = resolve_model(cfg, self.model)
        except ModelError as e:
            return f"the current model no longer resolves: {e}"
        if provider_config != self.provider.config:
            self.switch_model(self.model)
        return None

    async def compact(self) -> bool:
        """Summarise the conversation so far (conversation.compaction)."""
        return await self._conversation().compact()

    def switch_model(self, name: str) -> None:
        """Use another model from the next request on. Raises ModelError (message for the user)."""
        provider = LazyProvider(self.ws.config, name)
        provider.preload()
        if provider.config is self.provider.config:  # same provider: keep the session's choices
            old = self.provider
            provider.reasoning = old.reasoning or provider.reasoning
            if old.temperature is not None:
                provider.temperature = old.temperature
            if old.max_output_tokens is not None:
                provider.max_output_tokens = old.max_output_tokens
        self._retired.append(self.provider)
        self.provider, self.model = provider, name
        if self.conversation is not None:
            self.conversation.provider = provider
        if self.store is not None and self.session_id is not None:
            self.store.update_model(self.session_id, name)

    def cancel_tools(self, call_id: str | None = None) -> int:
        """Cancel one running tool, or all of them. Returns how many were asked to stop."""
        if self.runner is None:
            return 0
        ids = [call_id] if call_id else list(self.running)
        for cid in ids:
            self.runner.cancel(cid)
        return len(ids)

    @property
    def usage(self) -> tuple[int, int]:
        u = self.conversation.usage if self.conversation else None
        return (u.input_tokens, u.output_tokens) if u else (0, 0)

    async def close(self) -> None:
        """Release network clients (the app calls this on exit)."""
        self.settle()
        for provider in (*self._retired, self.provider):
            try:
                await provider.aclose()
            except Exception:  # closing is best effort: the process is about to end
                pass
