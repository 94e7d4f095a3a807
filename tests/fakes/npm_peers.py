"""Real MCP peers from npm, installed once into a cache dir outside the repo.

Tests that need them call npm_package_dir(); it skips the test, saying why, when node or npm
is missing or the install fails (no registry access). Set KEP_TEST_NPM_DIR to choose the
directory; CI can pre-warm it with
    npm install --no-audit --no-fund --prefix ~/.cache/kep-test-npm \
        @modelcontextprotocol/server-everything @modelcontextprotocol/inspector
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGES = ("@modelcontextprotocol/server-everything", "@modelcontextprotocol/inspector")
INSTALL_TIMEOUT = 240


def npm_dir() -> Path:
    return Path(os.environ.get("KEP_TEST_NPM_DIR") or Path.home() / ".cache" / "kep-test-npm")


def npm_package_dir(package: str) -> Path:
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node and npm are needed for this npm MCP peer")
    root = npm_dir()
    pkg = root / "node_modules" / package
    if (pkg / "package.json").exists():
        return pkg
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".install.lock").open("w") as lock:  # parallel workers install once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (pkg / "package.json").exists():
            try:
                proc = subprocess.run(
                    ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(root), *PACKAGES],
                    capture_output=True, text=True, timeout=INSTALL_TIMEOUT, cwd=root,
                )
            except subprocess.TimeoutExpired:
                pytest.skip(f"npm install of {package} took over {INSTALL_TIMEOUT}s")
            if proc.returncode != 0 or not (pkg / "package.json").exists():
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
                pytest.skip(f"npm install of {package} failed: {' / '.join(tail)}")
    return pkg


def npm_bin(name: str) -> Path:
    return npm_dir() / "node_modules" / ".bin" / name
