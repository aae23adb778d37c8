"""The sandbox image: a minimal Python runtime for the runner, with or without a registry.

Two ways to get one:

* ``deployments/Dockerfile`` (an official slim Python base plus a non-root user) for machines that
  reach a registry -- ``build_from_dockerfile``;
* ``build_from_rootfs`` for machines that do not (CI here): a tarball of a host interpreter, the shared
  libraries ``ldd`` lists for it *and* for its ``lib-dynload`` extension modules (else e.g. ``sqlite3``
  cannot load), and its standard library, imported with ``docker import`` and tagged by the tarball's
  sha256, so a changed runtime gets a new tag and an unchanged one is never imported twice.

The runner is standard-library only, so nothing else goes in: no shell, no package manager.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from acceptgate._util.resources import data_dir

REPOSITORY = "acceptgate-sandbox"
DOCKERFILE_TAG = f"{REPOSITORY}:py3.11-slim"
ROOTFS_FORMAT = "1"
MANIFEST_LABEL = "acceptgate.rootfs.manifest"
SHA_LABEL = "acceptgate.rootfs.sha256"
PYTHON_LABEL = "acceptgate.rootfs.python"
LIBS_LABEL = "acceptgate.rootfs.libs"  # bump when the layout below changes, so old images are not reused
SANDBOX_UID = 65534
DEFAULT_PYTHONS = ("/usr/bin/python3.11", "/usr/bin/python3")

# Directories under the standard library that no candidate needs: tests, and installed packages
# (a venv or pyenv interpreter keeps site-packages inside its stdlib directory).
_SKIP_DIRS = {"test", "tests", "idle_test", "__phello__", "site-packages", "dist-packages"}
_SKIP_PREFIXES = ("config-",)  # static libpython and build files (25 MB)

_PASSWD = (
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    f"nobody:x:{SANDBOX_UID}:{SANDBOX_UID}:nobody:/nonexistent:/usr/sbin/nologin\n"
)
_GROUP = f"root:x:0:\nnogroup:x:{SANDBOX_UID}:\n"
# Mount points: /tmp and /sandbox become per-container tmpfs; the rest the engine fills in.
_EMPTY_DIRS = {"/tmp": 0o1777, "/sandbox": 0o755, "/proc": 0o555, "/sys": 0o555, "/dev": 0o755}


class ImageError(RuntimeError):
    """The image cannot be built here; the message says why and what to do."""


@dataclass
class Layout:
    """Where an interpreter keeps what it needs at run time."""

    executable: str  # real path on the host
    version: str  # "3.11"
    library_dirs: list[str]  # stdlib and lib-dynload (sys.path under -I -S)


@dataclass
class Rootfs:
    path: str
    sha256: str
    size: int
    version: str
    files: int
    manifest: str = ""  # stat-level fingerprint of the host files, for a fast "is it current?"
    libs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def tag(self) -> str:
        return rootfs_tag(self.version, self.sha256)


def rootfs_tag(version: str, sha256: str) -> str:
    return f"{REPOSITORY}:py{version}-{sha256[:12]}"


def default_python() -> str:
    for candidate in DEFAULT_PYTHONS:
        if os.path.isfile(candidate):
            return candidate
    return sys.executable


def interpreter_layout(python: str) -> Layout:
    probe = ("import json, os, sys; print(json.dumps({'exe': os.path.realpath(sys.executable), "
             "'version': '%d.%d' % sys.version_info[:2], 'path': sys.path}))")
    try:
        out = subprocess.run([python, "-I", "-S", "-c", probe], capture_output=True, text=True,
                             timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise ImageError(f"cannot run the interpreter {python!r}: {exc}") from None
    info = json.loads(out)
    dirs = [p for p in info["path"] if p and os.path.isdir(p)]
    if not dirs:
        raise ImageError(f"{python} reports no standard-library directory")
    return Layout(executable=info["exe"], version=info["version"], library_dirs=dirs)


def _stdlib_files(directory: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs
                         if d not in _SKIP_DIRS and not d.startswith(_SKIP_PREFIXES))
        found.extend(os.path.join(root, f) for f in sorted(files))
    return found


_LDD_LINE = re.compile(r"^\s*(?:\S+\s+=>\s+)?(/\S+)\s+\(0x[0-9a-f]+\)\s*$")


def shared_libraries(binaries: list[str]) -> tuple[set[str], list[str]]:
    """Absolute paths of the libraries ``ldd`` lists for the binaries; plus notes on what is missing."""
    libs: set[str] = set()
    notes: list[str] = []
    for start in range(0, len(binaries), 64):
        batch = binaries[start : start + 64]
        proc = subprocess.run(["ldd", *batch], capture_output=True, text=True, timeout=60)
        current = batch[0]
        for line in proc.stdout.splitlines():
            if len(batch) > 1 and line.endswith(":") and not line.startswith("\t"):
                current = line[:-1]
                continue
            if "=> not found" in line:
                notes.append(f"{os.path.basename(current)}: {line.split()[0]} not found on the host "
                             "(module left unusable, as on the host)")
                continue
            match = _LDD_LINE.match(line)
            if match:
                libs.add(match.group(1))
    return libs, notes


class _TarBuilder:
    """Collects entries by image path, mirroring the host's symlinks (e.g. merged /usr), then writes
    them in sorted order with fixed owners so equal inputs give byte-equal tarballs."""

    def __init__(self) -> None:
        self.entries: dict[str, tuple[str, object]] = {}  # path -> (kind, host path | link | bytes)

    def _dir_chain(self, directory: str) -> str:
        """Make ``directory`` resolve in the image as on the host; return its host real path."""
        if directory == "/":
            return "/"
        parent, name = os.path.split(directory)
        real_parent = self._dir_chain(parent)
        here = os.path.join(real_parent, name)
        if os.path.islink(here):
            target = os.readlink(here)
            self.entries[here] = ("link", target)
            return self._dir_chain(os.path.normpath(os.path.join(real_parent, target)))
        self.entries.setdefault(here, ("dir", 0o755))
        return here

    def add_host_path(self, path: str, depth: int = 0) -> None:
        """Add a host file under the same path, with every symlink on the way."""
        if depth > 16:
            raise ImageError(f"symlink loop at {path}")
        parent, name = os.path.split(os.path.abspath(path))
        here = os.path.join(self._dir_chain(parent), name)
        if os.path.islink(here):
            target = os.readlink(here)
            self.entries[here] = ("link", target)
            self.add_host_path(os.path.normpath(os.path.join(os.path.dirname(here), target)), depth + 1)
        elif os.path.isfile(here):
            self.entries[here] = ("file", here)

    def add_dereferenced(self, path: str) -> None:
        """Add a host file as a regular file (a stdlib symlink to /etc, say); skip a dangling one."""
        if os.path.isfile(path):
            self._dir_chain(os.path.dirname(path))
            self.entries[path] = ("file", os.path.realpath(path))

    def add_bytes(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self._dir_chain(os.path.dirname(path))
        self.entries[path] = ("bytes", (data, mode))

    def add_dir(self, path: str, mode: int) -> None:
        self._dir_chain(os.path.dirname(path))
        self.entries[path] = ("dir", mode)

    def add_link(self, path: str, target: str) -> None:
        self._dir_chain(os.path.dirname(path))
        self.entries[path] = ("link", target)

    def write(self, out) -> int:
        count = 0
        with tarfile.open(fileobj=out, mode="w|", format=tarfile.GNU_FORMAT) as tar:
            for path in sorted(self.entries):
                kind, value = self.entries[path]
                info = tarfile.TarInfo(path.lstrip("/"))
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                if kind == "dir":
                    info.type, info.mode = tarfile.DIRTYPE, int(value)  # type: ignore[arg-type]
                    tar.addfile(info)
                elif kind == "link":
                    info.type, info.linkname, info.mode = tarfile.SYMTYPE, str(value), 0o777
                    tar.addfile(info)
                elif kind == "bytes":
                    data, mode = value  # type: ignore[misc]
                    info.size, info.mode = len(data), mode
                    tar.addfile(info, io.BytesIO(data))
                else:
                    st = os.stat(str(value))
                    executable = st.st_mode & stat.S_IXUSR
                    info.size = st.st_size
                    info.mode = 0o755 if executable else 0o644
                    # Keep the host mtime: cached bytecode is valid only against its source's mtime.
                    info.mtime = int(st.st_mtime)
                    with open(str(value), "rb") as f:
                        tar.addfile(info, f)
                count += 1
        return count


class _HashingWriter(io.RawIOBase):
    def __init__(self, f) -> None:
        self.f = f
        self.digest = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.digest.update(data)
        self.f.write(data)
        self.size += len(data)
        return len(data)


def _library_files(layout: Layout) -> list[str]:
    return [path for directory in layout.library_dirs for path in _stdlib_files(directory)]


def manifest(layout: Layout, libs: list[str]) -> str:
    """sha256 over (path, size, mtime) of every host file the image copies: cheap to recompute,
    so a backend can tell without building the tarball whether its image is still current."""
    digest = hashlib.sha256(f"format {ROOTFS_FORMAT}\n".encode())
    for path in [layout.executable, *_library_files(layout), *sorted(libs)]:
        try:
            st = os.stat(path)
        except OSError:
            return ""
        digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def build_rootfs(out_path: str, python: str | None = None) -> Rootfs:
    """Write the root filesystem tarball for ``python`` (default: the system's python3.11)."""
    layout = interpreter_layout(python or default_python())
    builder = _TarBuilder()
    builder.add_host_path(layout.executable)
    bin_dir = os.path.dirname(layout.executable)
    for alias in ("python3", f"python{layout.version}"):
        alias_path = os.path.join(bin_dir, alias)
        if alias_path != layout.executable:
            builder.add_link(alias_path, os.path.basename(layout.executable))
    if bin_dir != "/usr/bin":  # the image's PATH always finds python3
        builder.add_link("/usr/bin/python3", layout.executable)
    extensions: list[str] = []
    for directory in layout.library_dirs:
        builder._dir_chain(directory)
        for path in _stdlib_files(directory):
            builder.add_dereferenced(path)
            if path.endswith(".so"):
                extensions.append(path)
    libs, notes = shared_libraries([layout.executable, *extensions])
    for lib in sorted(libs):
        builder.add_host_path(lib)
    builder.add_bytes("/etc/passwd", _PASSWD.encode())
    builder.add_bytes("/etc/group", _GROUP.encode())
    for path, mode in _EMPTY_DIRS.items():
        builder.add_dir(path, mode)
    builder.add_bytes("/etc/acceptgate-rootfs", f"format {ROOTFS_FORMAT}\npython {layout.version}\n".encode())
    with open(out_path, "wb") as f:
        writer = _HashingWriter(f)
        files = builder.write(writer)
    return Rootfs(path=out_path, sha256=writer.digest.hexdigest(), size=writer.size,
                  version=layout.version, files=files, manifest=manifest(layout, sorted(libs)),
                  libs=sorted(libs), notes=notes)


def image_exists(client, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def import_rootfs(client, rootfs: Rootfs) -> str:
    """``docker import`` the tarball under its content tag (no-op when the tag exists)."""
    import docker.errors

    tag = rootfs.tag
    try:
        old = client.images.get(tag)
    except docker.errors.ImageNotFound:
        old = None
    if old is not None and (old.labels or {}).get(MANIFEST_LABEL) == rootfs.manifest:
        return tag
    repository, version = tag.split(":")
    changes = [
        "ENV PATH=/usr/local/bin:/usr/bin:/bin",
        f"USER {SANDBOX_UID}:{SANDBOX_UID}",
        "WORKDIR /sandbox",
        f"LABEL {SHA_LABEL}={rootfs.sha256}",
        f"LABEL {PYTHON_LABEL}={rootfs.version}",
        'CMD ["python3"]',
    ]
    if rootfs.manifest and all(_label_safe(lib) for lib in rootfs.libs):
        changes += [f"LABEL {MANIFEST_LABEL}={rootfs.manifest}",
                    f"LABEL {LIBS_LABEL}={':'.join(rootfs.libs)}"]
    client.api.import_image(src=rootfs.path, repository=repository, tag=version, changes=changes)
    if not image_exists(client, tag):
        raise ImageError(f"docker import of {rootfs.path} did not produce {tag}")
    if old is not None:  # same content, stale labels: the re-import took its tag
        try:
            client.images.remove(old.id)
        except docker.errors.APIError:
            pass  # still used by a container; the engine keeps it untagged
    return tag


def _label_safe(text: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9_./+-]+", text))


def current_rootfs_image(client, python: str | None = None) -> str | None:
    """The tag of a local rootfs image built from exactly these host files, if there is one."""
    layout = interpreter_layout(python or default_python())
    # One listing, no per-image inspection: an image removed meanwhile cannot fail the lookup.
    for img in client.api.images(filters={"label": MANIFEST_LABEL}):
        labels = img.get("Labels") or {}
        libs = [p for p in labels.get(LIBS_LABEL, "").split(":") if p]
        # The tag must be the content tag: an image built FROM this one inherits its labels.
        tag = rootfs_tag(labels.get(PYTHON_LABEL, ""), labels.get(SHA_LABEL, ""))
        if tag in (img.get("RepoTags") or ()) and labels.get(MANIFEST_LABEL) == manifest(layout, libs):
            return tag
    return None


def build_from_rootfs(client, python: str | None = None) -> tuple[str, Rootfs]:
    """Build (or find) the rootfs image for this host's interpreter; returns (tag, rootfs info)."""
    with tempfile.TemporaryDirectory(prefix="acceptgate-rootfs-") as tmp:
        rootfs = build_rootfs(os.path.join(tmp, "rootfs.tar"), python)
        return import_rootfs(client, rootfs), rootfs


def dockerfile_dir() -> Path:
    return data_dir("acceptgate.deployments")


def build_from_dockerfile(client, context: str | os.PathLike | None = None,
                          tag: str = DOCKERFILE_TAG) -> str:
    """``docker build`` of deployments/Dockerfile (needs a registry for the base image)."""
    import docker.errors

    context = Path(context or dockerfile_dir())
    if not (context / "Dockerfile").is_file():
        raise ImageError(f"no Dockerfile in {context}")
    try:
        client.images.build(path=str(context), tag=tag, rm=True, pull=False)
    except docker.errors.BuildError as exc:
        lines = [str(c.get("stream") or c.get("error") or "").strip() for c in exc.build_log]
        raise ImageError(f"docker build failed: {exc.msg}; last output: "
                         f"{' | '.join(l for l in lines if l)[-500:]}") from None
    except docker.errors.APIError as exc:
        raise ImageError(f"docker build failed: {exc.explanation or exc}") from None
    return tag


def local_rootfs_images(client) -> list[str]:
    return sorted(t for img in client.api.images(name=REPOSITORY) for t in img.get("RepoTags") or ()
                  if t.startswith(f"{REPOSITORY}:"))
