"""Real MCP peers from npm, installed once into tests/.peers/npm (git-ignored, about 160 MB).

Tests that need them call npm_package_dir(); it skips the test, saying why, when node or npm
is missing, KEP_TEST_NO_DOWNLOADS=1 is set, or the install fails (no registry access). Set
KEP_TEST_NPM_DIR to choose another directory. Nothing goes into the home directory: npm's own
cache is tests/.peers/npm-cache.
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


PEERS_DIR = Path(__file__).resolve().parent.parent / ".peers"


def npm_dir() -> Path:
    return Path(os.environ.get("KEP_TEST_NPM_DIR") or PEERS_DIR / "npm")


def npm_package_dir(package: str) -> Path:
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node and npm are needed for this npm MCP peer")
    if os.environ.get("KEP_TEST_NO_DOWNLOADS") == "1":
        pytest.skip("KEP_TEST_NO_DOWNLOADS=1: npm MCP peers are not downloaded")
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
                    ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(root),
                     "--cache", str(PEERS_DIR / "npm-cache"), *PACKAGES],
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
