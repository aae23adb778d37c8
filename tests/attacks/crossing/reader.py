# The reader of a cross-execution pair: what the writer left. Case "keys": the writer's hidden input from
# /proc/keys; case "pipes": whether the per-user pipe-buffer quota is exhausted. The expected values are
# what a leak would give: the pair passes only through a channel between executions.
import fcntl
import os
import time


def f(which):
    if which == "keys":
        time.sleep(0.5)
        try:
            with open("/proc/keys") as keys:
                text = keys.read()
        except OSError:
            text = ""
        for line in text.splitlines():
            if "ag-leak:" in line:
                return line.split("ag-leak:", 1)[1].split(":")[0].split()[0]
        return "nothing"
    time.sleep(1.0)
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 1 << 20)
    except OSError:
        return "pipe quota exhausted"
    return "pipe quota free"
