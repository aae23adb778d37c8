# acceptgate candidate runner: the only acceptgate code that runs inside the sandbox.
#
# Standard library only (it runs in bare interpreters and in the minimal Docker image). It loads the
# candidate, receives arguments one case at a time, and answers with literal results. It never receives
# expected values or test code. Framing on both pipes: b"<marker> <kind> <length>\n" + payload, where
# the marker is a per-execution random token the harness sends first. The candidate's own stdin, stdout
# and stderr are /dev/null, so nothing it prints can be mistaken for a frame.
#
# A result whose type is exactly collections.Counter is answered as a "counter" frame holding the repr
# of a plain dict copy (taken with dict's own methods: the class's may be the candidate's): the harness
# rebuilds a Counter, so that == has Counter semantics only where Python's would.
import collections
import errno
import marshal
import os
import sys

MAX_MESSAGE = 2000
MAX_TYPE_NAME = 200


def _main():
    # The interpreter read its hash seed at its start (the harness's one variable): the candidate's
    # environment is empty, as before.
    os.environ.pop("PYTHONHASHSEED", None)
    # Take the protocol pipes away from the candidate before it exists.
    _read, _write, _dup2, _open = os.read, os.write, os.dup2, os.open
    inp, out = os.dup(0), os.dup(1)
    devnull = _open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        _dup2(devnull, fd)
    # Keep private references: the candidate may monkeypatch builtins or modules.
    _type, _repr, _len, _str, _int, _exc = type, repr, len, str, int, BaseException
    _bytes, _memoryview = bytes, memoryview
    _isinstance, _oserror, _enomem = isinstance, OSError, errno.ENOMEM
    _loads = marshal.loads
    literal_types = (type(None), bool, int, float, complex, str, bytes)
    containers = (tuple, list, set, dict)
    # Fast check of a container's elements: the ids of their exact types (ids hash as ints: no
    # class's own __hash__/__eq__ runs, and a type matches only itself)
    _set, _map, _id = set, map, id
    scalar_ids = frozenset(_map(_id, literal_types))
    _counter, _dict, _dict_items = collections.Counter, dict, dict.items

    # Input is buffered (a frame may arrive in pieces); the harness sends a call only after the
    # previous answer, so the buffer never holds more than the call being answered.
    buf = bytearray()

    def fill():
        chunk = _read(inp, 1 << 16)
        if not chunk:
            raise EOFError
        buf.extend(chunk)

    def read_exact(n):
        while _len(buf) < n:
            fill()
        data = _bytes(buf[:n])
        del buf[:n]
        return data

    def read_line():
        while True:
            end = buf.find(b"\n")
            if end >= 0:
                line = _bytes(buf[:end])
                del buf[: end + 1]
                return line
            if _len(buf) > 200:
                raise EOFError
            fill()

    marker = read_line()

    def send(kind, payload):
        head = marker + b" " + kind + b" " + _str(_len(payload)).encode() + b"\n"
        # A big answer is written without copies: they would count against the candidate's memory.
        for data in ((head + payload,) if _len(payload) < 65536 else (head, payload)):
            view = _memoryview(data)
            while _len(view):
                n = _write(out, view)
                view = view[n:]

    def recv():
        head = read_line().split(b" ")
        if _len(head) != 3 or head[0] != marker:
            raise EOFError
        return head[1], read_exact(_int(head[2]))

    def describe(exc):
        try:
            message = _str(exc)[:MAX_MESSAGE]
        except _exc:
            message = "<unprintable>"
        try:  # built-in exceptions by name, any other class with its module (candidate.MemoryError)
            t = _type(exc)
            module, name = t.__module__, t.__qualname__
            if _type(module) is not _str or _type(name) is not _str:
                raise TypeError
            if module != "builtins":
                name = module + "." + name
            name = name[:MAX_TYPE_NAME]
        except _exc:
            name = "<unnamed exception>"
        try:  # e.g. mmap refused by the address-space limit: that is the memory limit
            if _isinstance(exc, _oserror) and _type(exc.errno) is _int and exc.errno == _enomem:
                name = "MemoryError"
        except _exc:
            pass
        return _repr({"type": name, "message": message}).encode("utf-8", "replace")

    def literal(value, depth):
        # Exact types only: a subclass (or any object) could carry its own __eq__.
        if depth > 100:
            return "nesting too deep (or a cycle)"
        t = _type(value)
        if t in literal_types:
            return None
        if t in containers:
            # Fast path (the common answer: a flat list/tuple/set/dict of scalars): the element types
            # gathered in C. Same answer as the walk below, whose scalars at depth + 1 <= 100 pass.
            if depth < 100:
                found = _set(_map(_id, _map(_type, value)))
                if t is dict:
                    found.update(_map(_id, _map(_type, value.values())))
                if found <= scalar_ids:
                    return None
            items = value.items() if t is dict else ((v, None) for v in value)
            for k, v in items:
                bad = literal(k, depth + 1) or literal(v, depth + 1)
                if bad:
                    return bad
            return None
        return "non-literal value of type " + t.__module__ + "." + t.__qualname__

    spell_hex = _hex_speller(_type, _repr, hex, _len)

    kind, payload = recv()
    if kind != b"load":
        return
    load = _loads(payload)
    _apply_filter(load.get("seccomp"))
    _apply_limits(load["limits"])
    namespace = {"__name__": "candidate", "__builtins__": __builtins__}
    try:
        exec(compile(load["source"], "candidate.py", "exec"), namespace)
        fn = namespace.get(load["entry_point"])
        if not callable(fn):
            raise NameError("entry point " + load["entry_point"] + " is not defined")
    except Exception as exc:  # a candidate that cannot load is a result, not a runner failure
        send(b"loaderr", describe(exc))
        return
    send(b"ready", b"")
    while True:
        kind, payload = recv()
        if kind != b"call":
            return
        args, kwargs = _loads(payload)
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            send(b"raise", describe(exc))
            continue
        answer = b"ok"
        try:
            if _type(result) is _counter:
                result, answer = _dict(_dict_items(result)), b"counter"
        except Exception as exc:
            send(b"raise", describe(exc))
            continue
        bad = literal(result, 0)
        if bad:
            send(b"nonliteral", _repr({"type": "nonliteral", "message": bad}).encode())
            continue
        try:
            try:
                text = _repr(result)
            except ValueError:  # an int beyond repr's digit limit: spelled in hex instead
                text = spell_hex(result)
            payload = text.encode("utf-8", "surrogatepass")
            text = None  # not held while sending (a 12 MB answer would be held twice)
            send(answer, payload)
            payload = None
        except Exception as exc:
            send(b"nonliteral", describe(exc))


def _hex_speller(_type, _repr, _hex, _len):
    # repr of a literal, except that ints repr cannot spell (over 4,300 digits) are written in hex
    # ("0x..."/"-0x...", linear time), which the harness's answer parser reads. Called only after repr
    # failed; the value has passed the literal check (exact types, depth <= 100).
    def spell(value):
        t = _type(value)
        if t is int:
            try:
                return _repr(value)
            except ValueError:
                return _hex(value)
        if t is list:
            return "[" + ", ".join([spell(v) for v in value]) + "]"
        if t is tuple:
            inner = [spell(v) for v in value]
            return "(" + inner[0] + ",)" if _len(inner) == 1 else "(" + ", ".join(inner) + ")"
        if t is set:
            return "{" + ", ".join([spell(v) for v in value]) + "}" if value else "set()"
        if t is dict:
            return "{" + ", ".join([spell(k) + ": " + spell(v) for k, v in value.items()]) + "}"
        return _repr(value)
    return spell


def _apply_filter(program):
    # The syscall filter, where no sandbox layer outside loads it (local-rlimits): before the candidate
    # exists. Without it the runner ends here (the harness sees an exit before any answer).
    if not program:
        return
    import ctypes

    class _Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    code = ctypes.create_string_buffer(program, len(program))
    prog = _Program(len(program) // 8, ctypes.cast(code, ctypes.c_void_p))
    # PR_SET_NO_NEW_PRIVS, then PR_SET_SECCOMP with SECCOMP_MODE_FILTER
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:
        raise SystemExit(125)


def _apply_limits(limits):
    try:
        import resource
    except ImportError:
        return
    for name, value in limits.items():
        which = getattr(resource, name, None)
        if which is None:
            continue
        # CPU: the soft limit a second below the hard one, so that reaching it is a SIGXCPU (at
        # soft == hard the kernel sends SIGKILL, indistinguishable from any other kill).
        hard = value + 1 if name == "RLIMIT_CPU" else value
        if name == "RLIMIT_AS":  # the candidate's own address space: on top of what the runner maps already
            value = hard = value + _mapped_bytes(resource)
        try:
            resource.setrlimit(which, (value, hard))
        except (ValueError, OSError):
            pass  # reported by the harness side, which states what it asked for


def _mapped_bytes(resource):
    # The runner's address space before the candidate exists (the interpreter, the preloaded modules):
    # it differs between backends (a fork server maps more), the candidate's share must not.
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


if __name__ == "__main__":
    try:
        _main()
    except EOFError:
        pass
    sys.exit(0)
