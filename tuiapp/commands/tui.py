"""`kep` with no subcommand: the full-screen chat.

Everything that can fail with a usage or config error (bad kep.toml, unknown model, missing
key, unknown session) fails here, before the screen opens: `kep: why` and exit 2, never a
traceback. Nothing slow happens before the first frame: tools are listed and the provider SDK
is imported in the background once the app is on screen.
"""

from __future__ import annotations

import argparse
import gc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuiapp.conversation.store import Store
    from tuiapp.project.workspace import Workspace
    from tuiapp.vocab.messages import Message


def main(args: argparse.Namespace) -> int:
    # Starting up creates only objects that live as long as the app (modules, styles, widgets):
    # a collection frees nothing, and the full one it reaches costs ~20 ms before the first
    # frame. So kep's modules are imported in _run, with collection off; the app freezes what
    # startup built and turns collection back on once it is on screen.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(args, resume_gc=collecting)
    finally:
        if collecting:
            gc.enable()


def _run(args: argparse.Namespace, *, resume_gc: bool) -> int:
    from tuiapp.commands._common import fail, load_config
    from tuiapp.conversation.store import Store, UnknownSession
    from tuiapp.conversation.store_schema import StoreError
    from tuiapp.project.workspace import Workspace
    from tuiapp.providers import ModelError, resolve_model

    # The TUI asks about trust and shows config warnings itself, on screen.
    cfg = load_config(args, headless=False)
    ws = Workspace(cfg)
    if getattr(args, "mode", None):
        ws.set_mode(args.mode)  # kept over config reloads
    try:
        store = Store.open()
    except StoreError as e:
        fail(str(e))
    try:
        session_id, history, model = _resume(args, store, ws)
        model = model or cfg.default_model()
        try:
            resolve_model(cfg, model)  # checks name and key; imports no SDK
        except ModelError as e:
            fail(str(e))
        # A new chat on the offline model greets and explains, until it is dismissed in
        # this project (the palette's "Show welcome" brings it back).
        from tuiapp.conversation import project_marks

        first_run = (session_id is None and model == "offline"
                     and project_marks.get("welcome-dismissed", ws.root) is None)

        from tuiapp.ui.app import make_app

        app = make_app(ws, model=model, store=store, session_id=session_id, history=history,
                       first_run=first_run, watch=True)
        app.resume_gc = resume_gc
        # --prompt / --agent: read now (a bad name or file exits 2), started once on screen.
        if any(getattr(args, name, None) for name in ("prompt", "agent", "set_vars")):
            from tuiapp.commands._start import plan_from_args

            app.pending_start = plan_from_args(ws, args, activate=False)
        _exit_on_sigterm(app)
        app.run()
        return app.return_code or 0
    except UnknownSession as e:
        fail(str(e))
    finally:
        store.close()


def _resume(args: argparse.Namespace, store: Store, ws: Workspace
            ) -> tuple[str | None, list[Message], str | None]:
    """--continue / --session ID → (session id, its history, its model unless --model)."""
    from tuiapp.commands._common import fail, take_session

    fork = bool(getattr(args, "fork", False))
    if not (args.continue_ or args.session):
        if fork:
            fail("--fork goes with --continue or --session")
        return None, [], args.model
    if args.continue_:
        from tuiapp.conversation.session_admin import continue_target

        session_id = continue_target(store, ws.root)
        if session_id is None:
            fail("no earlier session in this project to continue (kep sessions list --all)")
    else:
        session_id = store.resolve_id(args.session)
    session_id = take_session(store, session_id, fork=fork)
    history = store.load_messages(session_id)
    return session_id, history, args.model or store.session_info(session_id).model


def _exit_on_sigterm(app: object) -> None:
    """SIGTERM: kep's tools are already killed (lifetime); leave the screen cleanly, then end.
    A wedged app still ends 3 s later."""
    import asyncio
    import os
    import threading

    from tuiapp.tools import lifetime

    def hard_exit(code: int) -> None:
        lifetime.release()
        os._exit(code)

    def stop(sig: int) -> None:
        code = 128 + sig
        timer = threading.Timer(3.0, hard_exit, (code,))
        timer.daemon = True
        timer.start()
        try:
            asyncio.get_running_loop().call_soon_threadsafe(
                lambda: app.exit(return_code=code))  # type: ignore[attr-defined]
        except RuntimeError:  # not inside the app's loop (before it started, or after)
            hard_exit(code)

    lifetime.on_terminate(stop)
