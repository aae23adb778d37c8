"""External verifiers, run in the sandbox and certified like any other verifier. Three kinds:

- ``ext:FILE.py``: a Python program defining ``verify(candidate: str) -> str``, run by the candidate
  runner (the same backend and limits as candidates), one fresh process per decision. Its answer must
  be exactly "PASS" or "FAIL"; anything else is ERROR malformed, a raise or a failure to load is ERROR
  crash, no answer in time is ERROR timeout. Bound to the sha256 of its program text.
- ``cmd:COMMAND`` (``CommandVerifier``): any command that reads the candidate (on stdin, or as the
  file ``{file}``) and prints PASS or FAIL, in a fresh sandbox per decision (``sandbox/command.py``).
  Bound to the sha256 of the command text and of every file it can read.
- ``evalplus`` (``EvalPlusVerifier``): EvalPlus 0.3.1 itself, a command verifier running
  ``evalplus_judge.py`` with EvalPlus's code from its own venv. Bound to ``evalplus==0.3.1``.

An ERROR (the verifier crashed, timed out or answered something else) is never a correct rejection.
Nothing carries over from one decision to the next, so a re-run starts from reset. The mutation gate
does not apply: an external verifier's checks are not visible to mutate; its receipt says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from acceptgate._util.errors import InvalidInput
from acceptgate.sandbox import command as sandbox_command
from acceptgate.sandbox.backend import Backend, BackendUnavailable, Limits, MiB
from acceptgate.sandbox.executor import run_calls
from acceptgate._util.hashing import sha256_text
from acceptgate.v4v.verifiers import FAIL, PASS, VERSION, Binding, Decision, Verifier, error

ENTRY = "verify"


class ExternalVerifier(Verifier):
    family = "external"

    def __init__(self, name: str, program: str) -> None:
        self.name = name
        self.program = program
        self.program_sha256 = sha256_text(program)
        self.backend: Backend | None = None  # set by the certification before deciding
        self.limits = Limits()

    @classmethod
    def from_path(cls, path: str) -> "ExternalVerifier":
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read the verifier program: {exc}", source=path, field="--verifier") from None
        return cls(f"ext:{Path(path).name}", text)

    def binding(self, task) -> Binding:
        return Binding(f"{VERSION}:external", task.gold_sha256, self.program_sha256)

    def decide(self, candidate, task, run) -> Decision:
        if self.backend is None:
            raise RuntimeError("an external verifier needs a sandbox backend")
        outcomes, detail = run_calls(ENTRY, [((candidate.source,), {})], self.program, self.backend,
                                     limits=self.limits)
        if not outcomes:
            return error("crash", detail or "no answer")
        answer = outcomes[0]
        if answer.status == "timeout":
            return error("timeout", detail)
        if answer.status != "ok":
            return error("crash", f"{answer.status}: {answer.error_type or ''} {answer.message or detail}".strip())
        if answer.value == PASS:
            return Decision(PASS, reason="the verifier printed PASS")
        if answer.value == FAIL:
            return Decision(FAIL, reason="the verifier printed FAIL")
        shown = repr(answer.value)
        return error("malformed", f"answer {shown[:60]} is neither PASS nor FAIL")


# -- any command -------------------------------------------------------------------------------------

PYTHON_NAMES = ("python", "python3", "{python}")  # the sandbox's own interpreter (standard library only)
CANDIDATE_FILE = "candidate.py"
MAX_HASHED_BYTES = 512 * MiB  # what a verifier's mounted files may total (all are hashed into its version)
# A judge loads an interpreter and often a library per decision: more room than one candidate run.
COMMAND_LIMITS = Limits(wall_seconds=60.0, memory_bytes=1024 * MiB, cpu_seconds=61, processes=32)


@dataclass(frozen=True)
class ExternalOptions:
    """What external verifiers need besides their name (CLI options, Settings)."""

    mounts: tuple[str, ...] = ()  # host paths bound read-only for every command verifier
    evalplus_venv: str | None = None
    dataset: str | None = None  # the HumanEval+ file (EvalPlus reads its inputs from it)
    limits: Limits = COMMAND_LIMITS


def digest_paths(paths: list[str], *, field: str) -> str:
    """sha256 over every regular file under these paths: relative name and content, sorted."""
    h = hashlib.sha256()
    total = 0
    for top in sorted(paths):
        files = [top] if os.path.isfile(top) else sorted(
            os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs)
        for path in files:
            if not os.path.isfile(path):
                continue
            total += os.path.getsize(path)
            if total > MAX_HASHED_BYTES:
                raise InvalidInput(f"more than {MAX_HASHED_BYTES // MiB} MiB of files to bind and hash",
                                   source=top, field=field)
            h.update(path.encode() + b"\0")
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            h.update(b"\0")
    return h.hexdigest()


def _sandbox_may(st: os.stat_result, want: int) -> bool:
    """Would the sandbox's uid get ``want`` (R_OK | X_OK bits, as 4/1) on a file with this stat? As root
    the local backend runs commands as an unprivileged uid (``hostlayers.SANDBOX_UID`` or a slot uid that
    owns nothing), so the owner's and the group's bits apply only to files that uid owns."""
    from acceptgate.sandbox.hostlayers import SANDBOX_UID

    shift = 6 if st.st_uid == SANDBOX_UID else 3 if st.st_gid == SANDBOX_UID else 0
    return (st.st_mode >> shift) & want == want


def sandbox_access_problem(path: str) -> str | None:
    """Why the sandbox could not read ``path`` (a file, or a directory and what is in it); None when it
    can. Checked before any execution: bwrap started as the sandbox uid cannot even bind a path it cannot
    reach, and every decision would be ``ERROR crash: bwrap: Can't find source path``."""
    real = os.path.realpath(path)
    if os.geteuid() != 0:  # the sandbox runs as this uid (in a user namespace): its own rights apply
        bad = [p for p in [real] if not os.access(p, os.R_OK)]
        return f"{bad[0]} is not readable by this user" if bad else None
    parts = Path(real).parts
    for i in range(1, len(parts)):
        d = os.path.join(*parts[:i])
        st = os.stat(d)
        if not _sandbox_may(st, 1):
            return (f"directory {d} (mode {st.st_mode & 0o777:04o}, owner uid {st.st_uid}) does not let other "
                    "users enter it")
    tops = [real] if not os.path.isdir(real) else [real] + [os.path.join(dp, n) for dp, ds, fs in os.walk(real)
                                                            for n in ds + fs]
    for p in tops:
        st = os.stat(p)
        want = 5 if os.path.isdir(p) else 4
        if not _sandbox_may(st, want):
            return (f"{'directory' if want == 5 else 'file'} {p} (mode {st.st_mode & 0o777:04o}, owner uid "
                    f"{st.st_uid}) is not readable by other users")
    return None


def check_sandbox_access(paths: list[str], *, field: str) -> None:
    """InvalidInput naming the first path the sandbox could not read, and what to change."""
    from acceptgate.sandbox.hostlayers import SANDBOX_UID

    for path in paths:
        why = sandbox_access_problem(path)
        if why:
            raise InvalidInput(
                f"the sandbox runs command verifiers as an unprivileged uid ({SANDBOX_UID} or a slot uid), which "
                f"could not read this: {why}. Put the verifier and the files it reads where every user can "
                "read them (e.g. chmod o+rx on each directory above it and o+r on the files, or copy them under "
                "a world-readable directory such as /opt), then run again", source=path, field=field)


def interpret(result: "sandbox_command.CommandResult") -> Decision:
    """A command's run -> its decision. The verdict is the last non-empty line of stdout.

    PASS needs exit code 0; FAIL may come with exit code 0 or 1 (judges often exit 1 on a failure).
    Everything else is no decision: a timeout, a kill or any other exit code is ERROR timeout/crash
    (with or without a verdict line), no verdict or an unknown one is ERROR malformed.
    """
    tail = result.stderr_tail.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
    if result.timed_out:
        return error("timeout", result.describe())
    if result.stdout_overflow:  # checked before the signal: the harness killed it for this
        return error("malformed", f"more than {sandbox_command.STDOUT_BYTES} bytes on stdout")
    if result.oom_killed or result.signal:
        return error("crash", result.describe())
    lines = [ln.strip() for ln in result.stdout.decode("utf-8", "replace").splitlines() if ln.strip()]
    verdict = lines[-1] if lines else None
    rc = result.returncode
    if verdict == PASS and rc == 0:
        return Decision(PASS, reason="the command printed PASS")
    if verdict == FAIL and rc in (0, 1):
        return Decision(FAIL, reason="the command printed FAIL")
    if rc not in (0, 1) or (rc == 1 and verdict is None):
        return error("crash", f"{result.describe()} ({'verdict ' + verdict[:20] if verdict else 'no verdict'})"
                              f"{': ' + tail[0][:300] if tail[0] else ''}")
    if verdict is None:
        return error("malformed", "no PASS/FAIL line on stdout")
    return error("malformed", f"last line {verdict[:60]!r} with {result.describe()}: neither PASS nor FAIL")


class CommandVerifier(Verifier):
    """Any command that reads a candidate and prints PASS or FAIL, run in the sandbox.

    The candidate comes on stdin and also as a file: the placeholder ``{file}`` in the command is its
    path inside the sandbox; ``{task}`` is the task id and ``{entry_point}`` the function's name.
    ``python``/``python3`` as the program is the sandbox's interpreter (standard library only). Every
    argument naming an existing host file or dir is bound read-only at its absolute path, as are the
    ``mounts``. The version every decision is bound to: the sha256 of the command text and of every
    file it can read (the bound files, hashed at start).
    """

    family = "external"

    def __init__(self, command: str, options: ExternalOptions = ExternalOptions(), name: str | None = None) -> None:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise InvalidInput(f"cannot split the command: {exc}", field="--verifier-command") from None
        if not argv:
            raise InvalidInput("empty command", field="--verifier-command")
        self.name = name or f"cmd:{command}"
        self.command = command
        self.limits = options.limits
        self.backend: Backend | None = None
        binds, self.argv = [], []
        for i, arg in enumerate(argv):
            if i == 0 and arg in PYTHON_NAMES:
                self.argv.append("{python}")
            elif "{" not in arg and os.path.exists(arg):
                real = os.path.realpath(arg)
                binds.append(real)
                self.argv.append(real)
            else:
                self.argv.append(arg)
        for m in options.mounts:
            if not os.path.exists(m):
                raise InvalidInput("not found", source=m, field="--verifier-mount")
            binds.append(os.path.realpath(m))
        self.mounts = tuple(sorted(set(binds)))
        check_sandbox_access(list(self.mounts), field="--verifier-command")  # before any execution
        self.files_sha256 = digest_paths(list(self.mounts), field="--verifier-mount")
        self.command_sha256 = sha256_text(self.command)
        self.version = f"{VERSION}:command:sha256={sha256_text(self.command_sha256 + self.files_sha256)}"

    def binding(self, task) -> Binding:
        return Binding(self.version, self.files_sha256, self.command_sha256)

    def interpreter(self) -> str:
        b = self.backend
        return b.caps.bwrap.python if b.plan.namespaces else b.python

    def argv_for(self, task) -> list[str]:
        where = sandbox_command.input_dir(self.backend) or "{input}"
        values = {"{python}": self.interpreter(), "{file}": f"{where}/{CANDIDATE_FILE}", "{task}": task.task_id,
                  "{entry_point}": task.entry_point}
        out = []
        for arg in self.argv:
            for key, value in values.items():
                arg = arg.replace(key, value)
            out.append(arg)
        return out

    def decide(self, candidate, task, run) -> Decision:
        if self.backend is None:
            raise RuntimeError("a command verifier needs a sandbox backend")
        source = candidate.source.encode("utf-8", "surrogatepass")
        result = sandbox_command.run_command(self.backend, self.argv_for(task), source, self.limits,
                                             mounts=self.mounts, files={CANDIDATE_FILE: source})
        return interpret(result)


# -- EvalPlus 0.3.1 ------------------------------------------------------------------------------------

EVALPLUS_VERSION = "0.3.1"
JUDGE = Path(__file__).with_name("evalplus_judge.py")


def evalplus_site_packages(venv: str) -> str:
    """The venv's site-packages holding evalplus==0.3.1 (InvalidInput naming what is wrong)."""
    lib = Path(venv) / "lib"
    found = sorted(lib.glob("python3.*/site-packages")) if lib.is_dir() else []
    for sp in found:
        if (sp / f"evalplus-{EVALPLUS_VERSION}.dist-info").is_dir():
            return str(sp.resolve())
        if any(sp.glob("evalplus-*.dist-info")):
            raise InvalidInput(f"has another evalplus than {EVALPLUS_VERSION}", source=str(sp), field="--evalplus-venv")
    raise InvalidInput(f"no evalplus=={EVALPLUS_VERSION} in a lib/python3.*/site-packages here "
                       f"(python3 -m venv DIR && DIR/bin/pip install evalplus=={EVALPLUS_VERSION})",
                       source=venv, field="--evalplus-venv")


class EvalPlusVerifier(CommandVerifier):
    """EvalPlus 0.3.1 itself (its ``untrusted_check`` on the task's base then plus inputs), as a
    command verifier: ``evalplus_judge.py`` in the sandbox, with the venv's site-packages and the
    per-task expected outputs (computed once by EvalPlus in ``prepare``) bound read-only.

    The sandbox's interpreter runs EvalPlus's code, so the venv must be of the same Python minor
    version (its compiled modules, numpy and psutil, are loaded by that interpreter). Bound to
    ``evalplus==0.3.1``, the judge script's sha256 and, per task, the sha256 of its dataset record.
    """

    def __init__(self, options: ExternalOptions) -> None:
        if not options.evalplus_venv:
            raise InvalidInput("the evalplus verifier needs EvalPlus's venv", field="--evalplus-venv")
        if not options.dataset:
            raise InvalidInput("the evalplus verifier needs the HumanEval+ file", field="--dataset")
        self.site_packages = evalplus_site_packages(options.evalplus_venv)
        self.venv_python = str(Path(options.evalplus_venv) / "bin" / "python")
        self.dataset = options.dataset
        self.options = options
        self.name = "evalplus"
        self.limits = Limits(wall_seconds=max(options.limits.wall_seconds, 130.0),
                             memory_bytes=max(options.limits.memory_bytes, 2048 * MiB),
                             cpu_seconds=max(options.limits.cpu_seconds, 131), processes=options.limits.processes)
        self.backend = None
        self.task_dir: str | None = None
        self.record_sha256: dict[str, str] = {}
        self.judge = str(JUDGE.resolve())
        self.command_sha256 = sha256_text(JUDGE.read_text(encoding="utf-8"))
        self.command = f"python3 {JUDGE.name} judge (evalplus=={EVALPLUS_VERSION})"
        self.version = f"evalplus=={EVALPLUS_VERSION}:judge-sha256={self.command_sha256}"
        self.files_sha256 = ""

    def _check_python(self) -> None:
        want = Path(self.site_packages).parent.name  # python3.X
        have = Path(self.interpreter()).name
        if not have.startswith(want) and not _minor_of(self.interpreter()) == want:
            raise InvalidInput(f"the sandbox interpreter is {have}, this venv is for {want}",
                               source=self.site_packages, field="--evalplus-venv")

    def prepare(self, materials) -> None:
        """EvalPlus computes each task's expected outputs from its canonical solution (trusted code,
        outside the sandbox, as EvalPlus itself does), once."""
        if self.backend is None:
            raise RuntimeError("the evalplus verifier needs a sandbox backend")
        self._check_python()
        self.close()
        self.task_dir = tempfile.mkdtemp(prefix="acceptgate-evalplus-")
        os.chmod(self.task_dir, 0o755)
        ids = [m.task_id for m in materials]
        proc = subprocess.run([self.venv_python, "-I", self.judge, "prepare", self.site_packages, self.dataset,
                               self.task_dir, *ids], capture_output=True, text=True,
                              env={"PATH": os.environ.get("PATH", ""), "OPENBLAS_NUM_THREADS": "1"})
        if proc.returncode != 0:
            raise BackendUnavailable(f"EvalPlus could not compute the expected outputs: {proc.stderr[-1500:]}")
        self.record_sha256 = json.loads(proc.stdout.strip().splitlines()[-1])
        self.mounts = (self.site_packages, self.judge, self.task_dir)
        self.argv = ["{python}", "-I", "-S", self.judge, "judge", self.site_packages, self.task_dir, "{task}"]

    def binding(self, task) -> Binding:
        return Binding(self.version, self.record_sha256.get(task.task_id), self.command_sha256)

    def decide(self, candidate, task, run) -> Decision:
        if self.task_dir is None:
            raise RuntimeError("EvalPlusVerifier.prepare was not called")
        return super().decide(candidate, task, run)

    def close(self) -> None:
        if self.task_dir:
            shutil.rmtree(self.task_dir, ignore_errors=True)
            self.task_dir = None


def _minor_of(python: str) -> str:
    out = subprocess.run([python, "-I", "-S", "-c", "import sys; print('python%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True)
    return out.stdout.strip()


def make(name: str, options: ExternalOptions) -> Verifier | None:
    """The external verifier ``name`` stands for (ext:FILE.py, cmd:..., evalplus), or None for any other name."""
    if name.startswith("ext:"):
        return ExternalVerifier.from_path(name[4:])
    if name.startswith("cmd:"):
        return CommandVerifier(name[4:], options)
    if name == "evalplus":
        return EvalPlusVerifier(options)
    return None
