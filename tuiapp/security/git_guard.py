"""Git in a checkout the user has not trusted runs none of the checkout's commands.

`git status` runs `core.fsmonitor`, `git diff` runs `diff.external`, `git commit` runs
`.git/hooks/*`: a repository's own config names programs, and a tool allowed to run `git`
(the README's `git status` rule) would run them unasked. Every child kep starts gets, unless
the user trusted the project with those entries as they are now, git's own override
variables (GIT_CONFIG_COUNT/KEY_n/VALUE_n, which win over the repository's config) that
neutralise them, and no hooks."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from tuiapp.security import project_items
from tuiapp.vocab.trust_state import TrustState

# What a command-naming key is set to instead: a harmless value, or an empty one that makes
# git fail that one operation rather than run something (diff.external, drivers, aliases).
_NEUTRAL = {"core.fsmonitor": "false", "core.pager": "cat", "core.editor": "true",
            "sequence.editor": "true", "core.sshcommand": "ssh", "credential.helper": ""}
_BY_SUFFIX = {".clean": "cat", ".smudge": "cat", ".textconv": "cat", ".program": "gpg",
              ".helper": "", ".uploadpack": "git-upload-pack",
              ".receivepack": "git-receive-pack"}
# Always, for a project not trusted: no hooks from .git/hooks (a checkout's executables).
_ALWAYS = (("core.hooksPath", os.devnull), ("core.fsmonitor", "false"))
_ENV = {"GIT_PAGER": "cat", "GIT_EDITOR": "true", "GIT_SEQUENCE_EDITOR": "true"}


def _neutral_value(key: str) -> str:
    lowered = key.lower()
    if lowered in _NEUTRAL:
        return _NEUTRAL[lowered]
    return next((v for suffix, v in _BY_SUFFIX.items() if lowered.endswith(suffix)), "")


@functools.lru_cache(maxsize=64)
def _commands(config_file: str, _stamp: tuple[int, int]) -> tuple[tuple[str, str], ...]:
    return tuple(project_items.git_commands(Path(config_file).parent.parent))


def _found(root: Path) -> tuple[tuple[str, str], ...]:
    file = project_items.git_config_file(root)
    if file is None:
        return ()
    try:
        st = os.stat(file)
    except OSError:
        return ()
    if file.parent.name != ".git":  # a worktree: read through the worktree's root
        return tuple(project_items.git_commands(root))
    return _commands(str(file), (st.st_size, st.st_mtime_ns))


def guard_env(root: Path, state: TrustState) -> dict[str, str]:
    """The variables to add to a child's environment for the project at root."""
    found = _found(root)
    held = [(k, v) for k, v in found
            if not state.allows(project_items.git_item(k, v)[0])]
    if state.trusted and not held:
        return {}
    overrides = [] if state.trusted else list(_ALWAYS)
    overrides += [(key, _neutral_value(key)) for key, _ in held]
    # A filter neutralised must not be required either (git would refuse the file).
    overrides += [(f"{key.rsplit('.', 1)[0]}.required", "false")
                  for key, _ in held if key.lower().startswith("filter.")]
    env = dict(_ENV)
    env["GIT_CONFIG_COUNT"] = str(len(overrides))
    for i, (key, value) in enumerate(overrides):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env
