"""Where a benchmark ran (the machine and the commit, for the first line of a results table), and
the marked sections of `bench/results.md` each benchmark rewrites."""

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


def read_section(path: str, start: str, end: str) -> str:
    """The text between the marker lines ``start`` and ``end`` of ``path`` ('' if absent)."""
    text = open(path).read() if os.path.exists(path) else ""
    if start in text and end in text:
        return text[text.index(start) + len(start) + 1:text.index(end)]
    return ""


def write_section(path: str, start: str, end: str, body: str) -> None:
    """Put ``start``, ``body`` and ``end`` in ``path`` in place of the section those marker lines
    delimit, or append them if there is none."""
    text = open(path).read() if os.path.exists(path) else ""
    block = f"{start}\n{body}{end}\n"
    if start in text and end in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end) + 1:]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block
    with open(path, "w") as f:
        f.write(text)
