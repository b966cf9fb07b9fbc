"""The progress display of :func:`sodyn.monte_carlo`: compilation as a phase of its own, then a
bar over the samples whose rate and time estimate count only running chunks.

Compiling the batched rollout often takes longer than running a chunk, so a rate measured from
the start of the call would be wrong for the first chunks and its estimate of the time left far
too long.  :class:`RunProgress` therefore

1. prints ``monte_carlo: compiling ...`` at once (a run shows a sign of life before its first
   chunk ends) and ``monte_carlo: compiled in 2.31 s`` when the program is ready;
2. only then opens the bar (tqdm when installed, else :class:`LineProgress`), so its clock,
   rate and estimate start after compilation.  Chunks loaded from a store
   (:mod:`sodyn.simulate.store`) count as already done (tqdm's ``initial``) and do not enter
   the rate;
3. on a terminal, refreshes the line twice a second while a chunk runs, with the chunk's number
   and its running time, so a long first chunk shows that it is progressing.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator


class LineProgress:
    """A minimal progress line on stderr, used when tqdm is not installed: samples done, the rate
    and the estimated time left (both over the time since the bar opened)."""

    def __init__(self, total: int, desc: str, initial: int = 0):
        self.total, self.n, self.desc, self.start = total, initial, desc, time.perf_counter()
        self.initial, self.postfix = initial, ""
        self._show()

    def _show(self, end: str = "") -> None:
        elapsed = time.perf_counter() - self.start
        done = self.n - self.initial
        rate = done / elapsed if done and elapsed > 0 else 0.0
        eta = f", {(self.total - self.n) / rate:.1f}s left" if rate and self.n < self.total else ""
        speed = f", {rate:.3g} samples/s" if rate else ""
        postfix = f" {self.postfix}" if self.postfix else ""
        sys.stderr.write(f"\r{self.desc}: {self.n}/{self.total} samples [{elapsed:.1f}s{speed}{eta}]{postfix}{end}")
        sys.stderr.flush()

    def update(self, n: int) -> None:
        self.n += n
        self._show()

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self.postfix = text
        if refresh:
            self._show()

    def close(self) -> None:
        self._show("\n")


def _bar(total: int, desc: str, initial: int):
    try:
        from tqdm import tqdm  # optional dependency
    except ImportError:
        return LineProgress(total, desc, initial)
    kwargs = {"initial": initial} if initial else {}
    return tqdm(total=total, desc=desc, unit="sample", file=sys.stderr, **kwargs)


class RunProgress:
    """Progress of a run of ``total`` samples in ``n_chunks`` chunks (module doc); every method is
    a no-op when ``enabled`` is false.  Use::

        progress = RunProgress(total, n_chunks, enabled=True)
        with progress.compiling():
            compiled = lowered.compile()
        progress.open(done=samples_already_stored)
        with progress.chunk(c):
            ...
        progress.update(n)
        progress.close()
    """

    def __init__(self, total: int, n_chunks: int, *, enabled: bool, desc: str = "monte_carlo",
                 tick: float | None = None):
        self.total, self.n_chunks, self.enabled, self.desc = total, n_chunks, enabled, desc
        self.tick = tick if tick is not None else (0.5 if _is_tty(sys.stderr) else None)
        self.bar = None

    @contextlib.contextmanager
    def compiling(self) -> Iterator[None]:
        """The compile phase: one line before and one after (with its duration)."""
        if not self.enabled:
            yield
            return
        start = time.perf_counter()
        sys.stderr.write(f"{self.desc}: compiling ...\n")
        sys.stderr.flush()
        yield
        sys.stderr.write(f"{self.desc}: compiled in {time.perf_counter() - start:.2f} s\n")
        sys.stderr.flush()

    def open(self, done: int = 0) -> None:
        """Open the bar (its clock starts now), ``done`` samples already finished (loaded)."""
        if self.enabled and self.bar is None:
            self.bar = _bar(self.total, self.desc, done)

    @contextlib.contextmanager
    def chunk(self, c: int) -> Iterator[None]:
        """Chunk ``c`` running: on a terminal, the line is refreshed every ``tick`` seconds."""
        self.open()
        setter = getattr(self.bar, "set_postfix_str", None)
        if self.bar is None or self.tick is None or setter is None:
            yield
            return
        stop = threading.Event()
        start = time.perf_counter()

        def refresh() -> None:
            while not stop.wait(self.tick):
                setter(f"chunk {c + 1}/{self.n_chunks} running {time.perf_counter() - start:.0f}s")

        thread = threading.Thread(target=refresh, name="monte_carlo-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            setter("", refresh=False)

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


__all__ = ["LineProgress", "RunProgress"]
