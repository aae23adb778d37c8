"""A live gate service for tests: the real CLI (`acceptgate serve-api`) on a loopback port, with two
clients' keys, its own journal and warehouse in a temp dir. Stopped (SIGTERM, then waited) at the end."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
# One TLS context for every client here (the service is plain http on loopback): httpx builds a new one
# per client otherwise, 36 ms of CPU each, and the tests make a client per call.
TLS = ssl.create_default_context()
# A wait for the service to answer, not a measurement: a start takes seconds of CPU, many times that in
# wall time on a 2-core machine at load 8-12.
STARTUP_SECONDS = 300


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def new_key(keys: Path, client: str) -> str:
    out = subprocess.run([sys.executable, "-m", "acceptgate.cli", "serve-api", "new-key", "--client", client,
                          "--keys", str(keys)], capture_output=True, text=True, cwd=REPO, check=True)
    return out.stdout.strip()


@dataclass
class LiveService:
    root: Path
    extra: tuple[str, ...] = ()
    clients: tuple[str, ...] = ("alice", "bob")
    port: int = field(default_factory=free_port)
    keys: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse.duckdb"

    @property
    def journal(self) -> Path:
        return self.root / "service.sqlite"

    def start(self) -> "LiveService":
        keys_file = self.root / "keys.json"
        for client in self.clients:
            self.keys[client] = new_key(keys_file, client)
        env = {**os.environ, "DO_NOT_TRACK": "1", "GX_ANALYTICS_ENABLED": "false"}
        self.log = open(self.root / "server.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "acceptgate.cli", "serve-api", "--port", str(self.port), "--keys", str(keys_file),
             "--journal", str(self.journal), "--warehouse", str(self.warehouse), "--publish-seconds", "0.5",
             *self.extra], cwd=REPO, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve-api exited {self.proc.returncode}: {(self.root / 'server.log').read_text()}")
            try:
                if httpx.get(self.url + "/v1/health", timeout=1, verify=TLS).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError(f"serve-api did not answer within {STARTUP_SECONDS} s: "
                           f"{(self.root / 'server.log').read_text()}")

    def client(self, who: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[who]}"} if who else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, trust_env=False, verify=TLS)

    def stop(self) -> int | None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode if self.proc else None
