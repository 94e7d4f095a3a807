"""Real MCP peers from npm, installed once into tests/.peers/npm (git-ignored).

They are downloads (the inspector alone is over 100 MB), so they run where asked for:
KEP_TEST_PEERS=1, which `.ci/run` sets. Tests that need them call npm_package_dir(); it skips
the test, saying why, when that is not set, node or npm is missing, KEP_TEST_NO_DOWNLOADS=1 is
set, or the install fails (no registry access). Each test installs only the package it needs.
Set KEP_TEST_NPM_DIR to choose another directory. Nothing goes into the home directory, and
npm's download cache is a throwaway directory, removed after the install.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

INSTALL_TIMEOUT = 240


PEERS_DIR = Path(__file__).resolve().parent.parent / ".peers"


def npm_dir() -> Path:
    return Path(os.environ.get("KEP_TEST_NPM_DIR") or PEERS_DIR / "npm")


def npm_package_dir(package: str) -> Path:
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node and npm are needed for this npm MCP peer")
    if os.environ.get("KEP_TEST_NO_DOWNLOADS") == "1":
        pytest.skip("KEP_TEST_NO_DOWNLOADS=1: npm MCP peers are not downloaded")
    if os.environ.get("KEP_TEST_PEERS") != "1":
        pytest.skip("npm MCP peers are downloads: .ci/run runs this (or set KEP_TEST_PEERS=1)")
    root = npm_dir()
    pkg = root / "node_modules" / package
    if (pkg / "package.json").exists():
        return pkg
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".install.lock").open("w") as lock:  # parallel workers install once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (pkg / "package.json").exists():
            cache = tempfile.mkdtemp(prefix="npm-cache-", dir=root)
            try:
                proc = subprocess.run(
                    ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(root),
                     "--cache", cache, package],
                    capture_output=True, text=True, timeout=INSTALL_TIMEOUT, cwd=root,
                )
            except subprocess.TimeoutExpired:
                pytest.skip(f"npm install of {package} took over {INSTALL_TIMEOUT}s")
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            if proc.returncode != 0 or not (pkg / "package.json").exists():
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
                pytest.skip(f"npm install of {package} failed: {' / '.join(tail)}")
    return pkg


def npm_bin(name: str) -> Path:
    return npm_dir() / "node_modules" / ".bin" / name
