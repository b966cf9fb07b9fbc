"""Where a benchmark ran: the machine and the commit, for the first line of a results table."""

from __future__ import annotations

import os
import platform
import re
import subprocess

import jax

HERE = os.path.dirname(os.path.abspath(__file__))


def machine() -> str:
    """CPU model, CPU count and JAX device count."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.+)", f.read())
            cpu = m.group(1).strip() if m else cpu
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, {len(jax.devices())} JAX device(s)"


def commit() -> str:
    """The short commit hash, marked when tracked files have uncommitted changes."""
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=HERE,
                               capture_output=True, text=True, check=True).stdout.strip()
        return sha + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
