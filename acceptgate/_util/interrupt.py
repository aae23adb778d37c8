"""Stopping on SIGINT / SIGTERM: within seconds, nothing half-published, no process or temp dir left.

``install()`` (the CLI's first act) replaces both signals' handlers. The first signal sets ``STOP``,
kills this process's sandbox children (so the threads waiting on them return at once) and raises
``errors.Interrupted(signum)`` in the main thread; the run being made unwinds through its ledger,
which marks the attempt 'interrupted' and publishes nothing. Work not started yet refuses to start
(``check()``, called before each sandbox execution). Later signals are ignored: the stop is under way.
It also makes stdout and stderr drop what a reader that has gone cannot take (``streams``): a line
written on the way out must not derail the stop.

``finish(signum)`` ends the process: the threads still running get a few seconds to clean up, the
exit handlers run (the temporary Prefect server is stopped last, by ``keep_until_exit``), every
remaining descendant is killed, and the process exits 128 + signum without waiting for anything else.
"""

from __future__ import annotations

import _thread
import atexit
import os
import signal
import sys
import threading
import time
from typing import Callable

from acceptgate._util import streams
from acceptgate._util.errors import Interrupted

STOP = threading.Event()
SIGNALS = (signal.SIGINT, signal.SIGTERM)
_received: list[int] = []
_spared: set[int] = set()  # process groups stopped by their own exit handler, not in the signal handler
_lost = threading.Event()  # the Interrupted raised was swallowed (raised inside a __del__ or a callback)


STOP_EXIT_CODES = (130, 143)  # 128 + SIGINT, 128 + SIGTERM


def requested() -> bool:
    return STOP.is_set()


def _own_signal(exc: BaseException) -> int | None:
    """The signal this exception itself stands for (None: it is not a stop request)."""
    if isinstance(exc, Interrupted):
        return exc.signum
    if isinstance(exc, KeyboardInterrupt):
        return signal.SIGINT
    if isinstance(exc, SystemExit):
        return int(exc.code) - 128 if exc.code in STOP_EXIT_CODES else None
    if type(exc).__name__ == "TerminationSignal":  # Prefect's, on SIGTERM; the core does not import it
        number = getattr(exc, "signal", None)
        return number if isinstance(number, int) else signal.SIGTERM
    return None


def is_stop(exc: BaseException) -> bool:
    """Does the exception mean "the user (or the system) asked the process to stop"?"""
    return stop_signal(exc) is not None


def stop_signal(exc: BaseException) -> int | None:
    """The signal a stop request came by, or None when ``exc`` is no stop. A stop may arrive wrapped: a
    library that catches it mid-bookkeeping (Prefect while it creates a task run) can fail on its way
    out and raise its own error, with the stop as that error's cause or context -- still the stop."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        number = _own_signal(exc)
        if number is not None:
            return number
        exc = exc.__cause__ or exc.__context__
    return None


def received() -> int | None:
    """The signal of the stop under way (None: no stop was requested)."""
    return _received[0] if _received else (signal.SIGINT if STOP.is_set() else None)


def check() -> None:
    """Raise Interrupted when a stop was requested: called before work that would start a process."""
    if STOP.is_set():
        raise Interrupted(_received[0] if _received else signal.SIGINT)


def request(signum: int) -> bool:
    """Record a stop request; True for the first one. Kills the sandbox children at once."""
    first = not STOP.is_set()
    if first:
        _received.append(signum)
        STOP.set()
        kill_descendants(spare=_spared, keep=resource_tracker())
    return first


def should_raise(signum: int) -> bool:
    """For a signal handler: raise Interrupted now? On the first signal, and again when the one raised
    was swallowed; later signals are ignored while the stop is under way."""
    if request(signum):
        return True
    if _lost.is_set():
        _lost.clear()
        return True
    return False


def _handler(signum, frame) -> None:
    if should_raise(signum):
        raise Interrupted(signum)


def _unraisable(args) -> None:
    """A signal that lands in a finalizer or a weakref callback has its exception printed and dropped
    ("Exception ignored in ..."): deliver it again to the main thread instead."""
    if isinstance(args.exc_value, Interrupted):
        _lost.set()
        _thread.interrupt_main(args.exc_value.signum)
        return
    sys.__unraisablehook__(args)


def install() -> dict:
    """SIGINT and SIGTERM raise Interrupted in the main thread; returns the previous handlers and
    streams (none installed outside the main thread, where Python allows no handler)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {"unraisablehook": sys.unraisablehook, "streams": streams.tolerate_gone_readers()}
    sys.unraisablehook = _unraisable
    previous.update({sig: signal.signal(sig, _handler) for sig in SIGNALS})
    return previous


def restore(previous: dict) -> None:
    for key, handler in previous.items():
        if key == "unraisablehook":
            sys.unraisablehook = handler
        elif key == "streams":
            streams.restore(handler)
        else:
            signal.signal(key, handler)


def keep_until_exit(pgid: int | None, stop: Callable[[], None]) -> None:
    """A helper process group (the temporary Prefect server) that a signal must not kill before the
    run has recorded how it ended: stopped by ``stop`` at exit, after the exit handlers registered
    later (LIFO). ``pgid`` may be given later with ``spare``."""
    if pgid is not None:
        spare(pgid)
    atexit.register(stop)


def spare(pgid: int) -> None:
    _spared.add(pgid)


def unspare(pgid: int) -> None:
    """The group has ended (its number may be reused): no longer spared."""
    _spared.discard(pgid)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's counts); a zombie -- dead, not yet reaped -- is gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def _children_of() -> dict[int, list[int]]:
    """Each process's children, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def children(pid: int | None = None) -> list[int]:
    """The processes ``pid`` (default: this one) started, from /proc."""
    return _children_of().get(os.getpid() if pid is None else pid, [])


def descendants(pid: int | None = None) -> list[int]:
    """Every process below ``pid`` (default: this one), from /proc, parents before children."""
    children = _children_of()
    out, todo = [], list(children.get(os.getpid() if pid is None else pid, []))
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def resource_tracker() -> set[int]:
    """Python's multiprocessing resource tracker (Dask's local cluster starts one): killed before the exit
    handlers that still unregister with it, it is relaunched and prints a traceback per name it never
    saw. It goes in the last sweep, after them."""
    tracker = sys.modules.get("multiprocessing.resource_tracker")
    pid = getattr(getattr(tracker, "_resource_tracker", None), "_pid", None)
    return {pid} if pid else set()


def kill_descendants(spare: set[int] = frozenset(), keep: set[int] = frozenset()) -> int:
    """SIGKILL every descendant except those in a process group of ``spare`` (and their children) and
    the processes ``keep``."""
    killed = 0
    for _ in range(3):  # a child may fork while we look
        found = 0
        for p in descendants():
            try:
                if p in keep or os.getpgid(p) in spare:
                    continue
                os.kill(p, signal.SIGKILL)
                found += 1
            except (ProcessLookupError, PermissionError):
                continue
        killed += found
        if not found:
            break
    return killed


def _exit_handlers() -> None:
    """What a normal exit runs and os._exit skips: the threading module's exit calls (services that
    drain a queue, e.g. Prefect's log shipping), then the atexit handlers (last: the helpers)."""
    for call in reversed(getattr(threading, "_threading_atexits", [])):  # noqa: SLF001
        try:
            call()
        except Exception:  # noqa: BLE001  (one failing handler must not keep the others from running)
            pass
    atexit._run_exitfuncs()  # noqa: SLF001


def finish(signum: int, message: str | None, grace: float = 10.0) -> None:
    """Print the one line (None: none; a child whose parent says it), clean up, and exit 128 + signum
    (never returns)."""
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    STOP.set()
    kill_descendants(spare=_spared, keep=resource_tracker())
    deadline = time.monotonic() + grace
    for t in threading.enumerate():  # they remove their sandboxes' work dirs once their process is gone
        if t is not threading.main_thread() and not t.daemon:
            t.join(max(0.0, deadline - time.monotonic()))
    runner = threading.Thread(target=_exit_handlers, daemon=True)
    runner.start()
    runner.join(max(2.0, deadline - time.monotonic()))
    kill_descendants()  # the helpers too, if their exit handler could not stop them
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if message is not None:
        try:  # nothing may keep the exit below from happening
            print(message, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass
    os._exit(128 + signum)
