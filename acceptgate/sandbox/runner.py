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
#
# A "dcall" (a case whose expected value the harness holds only as a digest: outputs of up to a GB) is
# answered with a "digest" frame, "<sha256 hex> <length>" of the result's equality form, computed here
# by the harness's own digest code (sent with the load, defined before the candidate exists): the
# result is never spelled out or shipped. The candidate never sees the expected digest.
import collections
import errno
import marshal
import os
import sys

MAX_MESSAGE = 2000
MAX_TYPE_NAME = 200


# Every function below that runs once the candidate exists is a closure made before it exists: it
# holds the runner's private references (the pipes, the marker, the builtins and constants it needs) in
# its cells and looks up no global, so a candidate that rebinds a builtin or a name of this module
# (reachable from its frames) changes nothing of the protocol. The factories (_wire, _describer,
# _literal_check, _hex_speller, _answerer, _server) take their references when _main calls them, before
# the load; tests/test_runner_names.py checks that no closure looks up a global name.
def _main():
    # The interpreter read its hash seed at its start (the harness's one variable): the candidate's
    # environment is empty, as before.
    os.environ.pop("PYTHONHASHSEED", None)
    send, recv = _wire(*_take_pipes())
    describe = _describer()
    serve = _server(recv, send, describe, _answerer(send, describe))
    kind, payload = recv()
    if kind != b"load":
        return
    load = marshal.loads(payload)
    digest = _digester(load.get("digest"))
    _apply_filter(load.get("seccomp"))
    _apply_limits(load["limits"])
    serve(load, digest)  # loads the candidate: nothing of _main runs after this call


def _take_pipes():
    # Take the protocol pipes away from the candidate before it exists: (input, output) descriptors,
    # and 0, 1, 2 on /dev/null.
    inp, out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    return inp, out


def _wire(inp, out):
    # (send, recv) on the protocol pipes, once the harness's marker is read.
    _read, _write, _len, _str, _int = os.read, os.write, len, str, int
    _bytes, _memoryview, _eof = bytes, memoryview, EOFError
    # Input is buffered (a frame may arrive in pieces, or several at once): the harness writes at most
    # the rest of the current block ahead (a hidden suite's block is called whole whatever the answers)
    # and a visible suite's calls one at a time.
    buf = bytearray()

    def fill():
        chunk = _read(inp, 1 << 16)
        if not chunk:
            raise _eof
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
                raise _eof
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
            raise _eof
        return head[1], read_exact(_int(head[2]))

    return send, recv


def _describer():
    # describe(exc): an exception as the runner reports it, {"type": name, "message": text}.
    _type, _repr, _str, _int, _exc = type, repr, str, int, BaseException
    _isinstance, _oserror, _enomem, _typeerror = isinstance, OSError, errno.ENOMEM, TypeError
    max_message, max_type_name = MAX_MESSAGE, MAX_TYPE_NAME

    def describe(exc):
        try:
            message = _str(exc)[:max_message]
        except _exc:
            message = "<unprintable>"
        try:  # built-in exceptions by name, any other class with its module (candidate.MemoryError)
            t = _type(exc)
            module, name = t.__module__, t.__qualname__
            if _type(module) is not _str or _type(name) is not _str:
                raise _typeerror
            if module != "builtins":
                name = module + "." + name
            name = name[:max_type_name]
        except _exc:
            name = "<unnamed exception>"
        try:  # e.g. mmap refused by the address-space limit: that is the memory limit
            if _isinstance(exc, _oserror) and _type(exc.errno) is _int and exc.errno == _enomem:
                name = "MemoryError"
        except _exc:
            pass
        return _repr({"type": name, "message": message}).encode("utf-8", "replace")

    return describe


def _literal_check():
    # literal(value, depth): None for a literal, else why not. Exact types only: a subclass (or any
    # object) could carry its own __eq__.
    _type, _set, _map, _id, _dict = type, set, map, id, dict
    literal_types = (type(None), bool, int, float, complex, str, bytes)
    containers = (tuple, list, set, dict)
    # Fast check of a container's elements: the ids of their exact types (ids hash as ints: no
    # class's own __hash__/__eq__ runs, and a type matches only itself)
    scalar_ids = frozenset(_map(_id, literal_types))

    def literal(value, depth):
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
                if t is _dict:
                    found.update(_map(_id, _map(_type, value.values())))
                if found <= scalar_ids:
                    return None
            items = value.items() if t is _dict else ((v, None) for v in value)
            for k, v in items:
                bad = literal(k, depth + 1) or literal(v, depth + 1)
                if bad:
                    return bad
            return None
        return "non-literal value of type " + t.__module__ + "." + t.__qualname__

    return literal


def _answerer(send, describe):
    # answer(kind, result, digest): the frame for one call's result: ok, counter, digest (dcall),
    # nonliteral, or raise when a Counter's copy fails.
    _type, _repr, _str, _exception, _valueerror = type, repr, str, Exception, ValueError
    _counter, _dict, _dict_items = collections.Counter, dict, dict.items
    literal, spell_hex = _literal_check(), _hex_speller()

    def answer(kind, result, digest):
        code = b"ok"
        try:
            if _type(result) is _counter:
                result, code = _dict(_dict_items(result)), b"counter"
        except _exception as exc:
            send(b"raise", describe(exc))
            return
        bad = literal(result, 0)
        if bad:
            send(b"nonliteral", _repr({"type": "nonliteral", "message": bad}).encode())
            return
        if kind == b"dcall":
            try:
                hexdigest, length = digest(result)
                send(b"digest", (hexdigest + " " + _str(length)).encode("ascii"))
            except _exception as exc:
                send(b"nonliteral", describe(exc))
            return
        try:
            try:
                text = _repr(result)
            except _valueerror:  # an int beyond repr's digit limit: spelled in hex instead
                text = spell_hex(result)
            payload = text.encode("utf-8", "surrogatepass")
            text = None  # not held while sending (a 12 MB answer would be held twice)
            send(code, payload)
            payload = None
        except _exception as exc:
            send(b"nonliteral", describe(exc))

    return answer


def _server(recv, send, describe, answer):
    # serve(load, digest): the candidate loaded, then one answer per call until the harness stops.
    _exec, _compile, _callable, _nameerror, _exception = exec, compile, callable, NameError, Exception
    _loads, _builtins = marshal.loads, __builtins__

    def serve(load, digest):
        namespace = {"__name__": "candidate", "__builtins__": _builtins}
        try:
            _exec(_compile(load["source"], "candidate.py", "exec"), namespace)
            fn = namespace.get(load["entry_point"])
            if not _callable(fn):
                raise _nameerror("entry point " + load["entry_point"] + " is not defined")
        except _exception as exc:  # a candidate that cannot load is a result, not a runner failure
            send(b"loaderr", describe(exc))
            return
        send(b"ready", b"")
        while True:
            kind, payload = recv()
            if kind != b"call" and not (kind == b"dcall" and digest):
                return
            args, kwargs = _loads(payload)
            payload = None  # not held during the call and its answer
            try:
                result = fn(*args, **kwargs)
            except _exception as exc:
                send(b"raise", describe(exc))
                continue
            answer(kind, result, digest)

    return serve


def _digester(source):
    # The harness's equality digest (its own code, not the candidate's), defined with a copy of the
    # builtins taken before the candidate loads; None when the suite has no digested case.
    if not source:
        return None
    import builtins
    import hashlib  # imported now: the digest's own import then finds the module loaded

    namespace = {"__builtins__": dict(builtins.__dict__), "__name__": "acceptgate_digest"}
    exec(compile(source, "<acceptgate digest>", "exec"), namespace)
    return namespace["acceptgate_equality_digest"]


def _hex_speller():
    # repr of a literal, except that ints repr cannot spell (over 4,300 digits) are written in hex
    # ("0x..."/"-0x...", linear time), which the harness's answer parser reads. Called only after repr
    # failed; the value has passed the literal check (exact types, depth <= 100).
    _type, _repr, _hex, _len, _valueerror = type, repr, hex, len, ValueError
    _int, _list, _tuple, _set, _dict = int, list, tuple, set, dict

    def spell(value):
        t = _type(value)
        if t is _int:
            try:
                return _repr(value)
            except _valueerror:
                return _hex(value)
        if t is _list:
            return "[" + ", ".join([spell(v) for v in value]) + "]"
        if t is _tuple:
            inner = [spell(v) for v in value]
            return "(" + inner[0] + ",)" if _len(inner) == 1 else "(" + ", ".join(inner) + ")"
        if t is _set:
            return "{" + ", ".join([spell(v) for v in value]) + "}" if value else "set()"
        if t is _dict:
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


def _as_script():
    # Run as a script (local-rlimits, docker's runners without its fork server): its exit and EOFError
    # taken before the candidate exists, as every later lookup.
    _exit, _eof = sys.exit, EOFError
    try:
        _main()
    except _eof:
        pass
    _exit(0)


if __name__ == "__main__":
    _as_script()
