"""`kep sandbox [--network] [--write PATH] -- CMD ARGS…`: run any command behind the project's
walls (a way to try a profile), saying first what it allows; exits with the command's status.
`kep sandbox --explain`: the resolved profile and the mechanism, nothing run."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys

from tuiapp.commands._common import fail, load_config


def main(args: argparse.Namespace) -> int:
    from tuiapp.security.sandbox import spawn

    cfg = load_config(args)
    settings = cfg.sandbox
    if args.network:
        settings = dataclasses.replace(settings, network="on")
    if args.write:
        settings = dataclasses.replace(settings, writable=(*settings.writable, *args.write))
    cfg = dataclasses.replace(cfg, sandbox=settings)
    spawn.use_config(cfg)
    spawn.notice = lambda line: None  # said below, in its place
    command = list(args.cmd or [])
    if command[:1] == ["--"]:
        command = command[1:]
    mech = spawn.mechanism()
    why = mech.missing()
    out = sys.stdout if args.explain else sys.stderr
    print(f"mechanism: {mech.name}" + (f" (unavailable: {why})" if why else
                                       f" ({mech.how})" if args.explain and mech.how else ""),
          file=out)
    if not settings.enabled:
        print("sandbox: off ([sandbox] enabled = false)", file=out)
    prof = spawn.profile_for(cfg.project_root)
    for line in prof.describe() if args.explain else [f"sandbox: {prof.summary()}"]:
        print(line, file=out)
    if args.explain:
        if command:
            fail("--explain runs nothing: leave out the command, or leave out --explain")
        return 0
    if not command:
        fail("nothing to run: kep sandbox [--network] [--write PATH] -- CMD ARGS…")
    return asyncio.run(_run(command, str(cfg.project_root)))


async def _run(command: list[str], cwd: str) -> int:
    from tuiapp.security.sandbox import netask, spawn

    with netask.recording() as net:
        try:
            proc = await spawn.create_exec(command, cwd=os.getcwd() if _inside(cwd) else cwd,
                                           env=None, kind="tool")
        except spawn.SandboxRequired as e:
            fail(str(e))
        except OSError as e:
            fail(f"could not start {command[0]}: {e.strerror or e}", 127)
        code = await proc.wait()
    for line in netask.summary(net):  # the hosts it reached through kep's proxy
        print(line, file=sys.stderr)
    return code if code >= 0 else 128 - code


def _inside(root: str) -> bool:
    here = os.path.realpath(os.getcwd())
    return here == root or here.startswith(root.rstrip("/") + "/")
