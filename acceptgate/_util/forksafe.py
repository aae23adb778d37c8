"""Module state renewed in a process forked from a harness (a batch's worker process, ``workerprocs``).

A fork copies only the forking thread: a lock another thread held at that moment stays held for ever
in the child, and a helper thread's queue has no thread behind it. A module registers here the globals
a child must make anew; the parent is untouched.
"""

from __future__ import annotations

import os
from typing import Any, Callable


def renew_in_child(namespace: dict[str, Any], **makers: Callable[[], Any]) -> None:
    """After every fork, in the child: ``namespace[name] = make()`` for each ``name=make`` given
    (``namespace``: the calling module's ``globals()``)."""
    os.register_at_fork(after_in_child=lambda: namespace.update({name: make() for name, make in makers.items()}))
