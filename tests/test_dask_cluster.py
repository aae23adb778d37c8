"""Scale-out on a real cluster: a ``dask scheduler`` and two ``dask worker`` processes started with the
dask CLI on 127.0.0.1 (free ports, their own working directories and TMPDIRs, one thread each, the
test's Prefect server in their environment), over mutual TLS with the files of ``acceptgate dask
credentials``. score, gate and certify against ``tls://127.0.0.1:PORT`` give the single-process rows; a worker killed in the middle of its shard; every process stopped.

One cluster per module (each test process of pytest-xdist starts its own); 2 tasks, a few samples.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import sandbox_cgroups_of
from shard_rows import assert_same_rows, suites_and_samples, table_rows, task_run_names
from acceptgate.pipelines.requests import AuditRequest, CertifyRequest, GateRequest, LeakBackfillRequest

pytestmark = pytest.mark.prefect

TASKS = 2
START_SECONDS = 120  # a process start on a loaded 2-core machine


class Cluster:
    def __init__(self, root: Path, api_url: str) -> None:
        self.root = root
        self.procs: dict[str, subprocess.Popen] = {}
        self.tmpdirs: dict[str, Path] = {}
        self.env = {**os.environ, "PREFECT_API_URL": api_url,
                    "PYTHONPATH": os.pathsep.join(p for p in [str(Path(__file__).resolve().parents[1]),
                                                              os.environ.get("PYTHONPATH", "")] if p)}
        self.address = ""
        from acceptgate.pipelines import clustertls
        self.creds = clustertls.write_credentials(root / "creds")
        self.dask = None  # the DaskCluster acceptgate is given: the address and the client's credentials

    def tls(self, role: str) -> list[str]:
        from acceptgate.pipelines import clustertls
        files = clustertls.role_files(self.creds, role)
        return ["--tls-ca-file", str(files.ca_file), "--tls-cert", str(files.cert), "--tls-key", str(files.key)]

    def start(self, name: str, *args: str) -> subprocess.Popen:
        home = self.root / name
        home.mkdir(parents=True)
        # its own temp dir, in the system's: the sandbox's unprivileged user must reach what the local
        # backend puts there (pytest's base temp dir is private to this user); removed in stop()
        tmp = Path(tempfile.mkdtemp(prefix=f"acceptgate-test-{name}-"))
        tmp.chmod(0o711)
        self.tmpdirs[name] = tmp
        env = {**self.env, "TMPDIR": str(tmp)}
        log = open(home / "log", "wb")
        # its own session: stopping it stops whatever it started (sandboxes included)
        proc = subprocess.Popen([sys.executable, "-m", "dask", *args], cwd=home, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        return (self.root / name / "log").read_text(errors="replace")[-3000:]

    def up(self) -> None:
        info = self.root / "scheduler.json"
        self.start("scheduler", "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", "0",
                   "--no-dashboard", "--scheduler-file", str(info), *self.tls("scheduler"))
        deadline = time.monotonic() + START_SECONDS
        while not info.exists() or not info.read_text().strip():
            assert self.procs["scheduler"].poll() is None, self.log("scheduler")
            assert time.monotonic() < deadline, "no scheduler file: " + self.log("scheduler")
            time.sleep(0.2)
        time.sleep(0.2)  # the file is written whole, but give the writer its close
        self.address = json.loads(info.read_text())["address"]
        assert self.address.startswith("tls://127.0.0.1:"), self.address
        for n in (1, 2):
            self.start(f"worker{n}", "worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                       "--host", "127.0.0.1", "--name", f"worker{n}",
                       "--local-directory", str(self.root / f"worker{n}" / "dask"), *self.tls("worker"))
        from distributed import Client

        from acceptgate.pipelines import clustertls, daskcluster
        from acceptgate.flows import dask_runner

        client_files = clustertls.role_files(self.creds, "client")
        self.dask = daskcluster.parse(self.address, tls_ca_file=str(client_files.ca_file),
                                      tls_cert=str(client_files.cert), tls_key=str(client_files.key))
        with Client(self.address, timeout=START_SECONDS, security=dask_runner.security(self.dask)) as client:
            client.wait_for_workers(2, timeout=START_SECONDS)
            names = {addr: info["name"] for addr, info in client.scheduler_info()["workers"].items()}
            self.worker_pids = {names[addr]: pid for addr, pid in client.run(os.getpid).items()}
        # --no-nanny: each worker is the process the CLI started (killing it kills the worker)
        assert self.worker_pids == {n: self.procs[n].pid for n in ("worker1", "worker2")}, self.worker_pids

    def descendants(self) -> list:
        import psutil

        out = []
        for proc in self.procs.values():
            try:
                parent = psutil.Process(proc.pid)
                out += [parent, *parent.children(recursive=True)]
            except psutil.NoSuchProcess:
                pass
        return out

    def stop(self) -> list:
        """Every process down (SIGTERM, then SIGKILL); returns any that survived."""
        import psutil

        everyone = self.descendants()
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        _, alive = psutil.wait_procs(everyone, timeout=15)
        for tmp in self.tmpdirs.values():
            shutil.rmtree(tmp, ignore_errors=True)
        return [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@pytest.fixture(scope="module")
def cluster(prefect_harness, tmp_path_factory):
    from prefect.settings import PREFECT_API_URL

    c = Cluster(tmp_path_factory.mktemp("cluster"), PREFECT_API_URL.value())
    try:
        c.up()
        yield c
    finally:
        survivors = c.stop()
    assert not survivors, f"orphan processes after the cluster stopped: {survivors}"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, humanevalplus_path, codet_samples_path, local_backend):
    """The first 2 HumanEval+ tasks as a suites directory, and 4 CodeT samples of each."""
    return suites_and_samples(tmp_path_factory.mktemp("cluster-inputs"), humanevalplus_path, codet_samples_path,
                              local_backend, TASKS, 4)


@pytest.fixture
def api_env(monkeypatch):
    from prefect.settings import PREFECT_API_URL

    monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())


def test_score_on_the_cluster_gives_the_single_process_verdicts(cluster, inputs, api_env, local_backend):
    from acceptgate.scoring import score
    from acceptgate.pipelines import shards
    from acceptgate.flows import score_sharded

    suites_dir, samples = inputs
    sharded = score_sharded.run(suites_dir, samples, suite="hidden", dask=cluster.dask, shard_size=2)
    loaded = shards.load_inputs(suites_dir, samples, "hidden")
    single = score.score_samples(loaded.sample_file, loaded.suites, loaded.prompts, local_backend, suite="hidden",
                                 excluded=loaded.excluded)
    row = lambda r: (r.task_id, r.sample_index, r.verdict, r.cases_failed, r.cases_run)  # noqa: E731
    assert [row(r) for r in sharded.report.rows] == [row(r) for r in single.rows]
    assert len(single.rows) == TASKS * 4 and {r.verdict for r in single.rows} >= {"pass", "fail"}
    # the shards ran in the cluster's worker processes, not here (which of the two took how many is
    # the scheduler's choice: under load one worker may take them all)
    assert {int(w.rpartition(":")[2]) for w in sharded.samples_by_worker} <= set(cluster.worker_pids.values())


def _gate(warehouse: Path, suites_dir: str, codet: str, **kw):
    from acceptgate.flows.gate import gate

    return gate(GateRequest(certify=False, arms=["conform", "hmix", "off"], source=f"codet:{codet}",
                            suites_dir=suites_dir, warehouse=str(warehouse), per_task=2, gauge=False, **kw))


def test_gate_on_the_cluster_gives_the_single_process_rows(cluster, inputs, api_env, tmp_path, codet_samples_path):
    suites_dir, _ = inputs
    single = _gate(tmp_path / "single.duckdb", suites_dir, str(codet_samples_path))
    sharded = _gate(tmp_path / "dask.duckdb", suites_dir, str(codet_samples_path), dask=cluster.dask,
                    shard_size=1)
    assert sharded.run.run_id == single.run.run_id  # derived from the inputs; where it ran is not one
    want = table_rows(tmp_path / "single.duckdb", "gate")
    assert len(want["gate_decisions"]) == 3 * TASKS and len(want["gate_attempts"]) > 0
    assert_same_rows(table_rows(tmp_path / "dask.duckdb", "gate"), want)
    from acceptgate.store import warehouse

    with warehouse.connect(tmp_path / "dask.duckdb", read_only=True) as con:
        assert con.execute("select status from run_attempts").fetchall() == [("ok",)]


HELDOUT_SEED = "5eed" * 8


def _certify(warehouse: Path, suites_dir: str, dataset: str, samples: str, **kw):
    from acceptgate.v4v import certify as C
    from acceptgate.v4v.pools import PoolSettings
    from acceptgate.flows.certify import certify

    # one held-out seed for both runs: the held-out part is made from it (a fresh one per run otherwise)
    settings = C.Settings(pool=PoolSettings(samples_per_task=2), repeat_sample=0, workers=1, heldout_seed=HELDOUT_SEED)
    return certify(CertifyRequest(suites_dir=suites_dir, dataset=dataset, samples=samples, warehouse=str(warehouse),
                                  settings=settings, gauge=False, **kw))


def test_certify_on_the_cluster_gives_the_single_process_rows(cluster, inputs, api_env, tmp_path,
                                                              humanevalplus_path, codet_samples_path):
    suites_dir, _ = inputs
    args = (suites_dir, str(humanevalplus_path), str(codet_samples_path))
    single = _certify(tmp_path / "single.duckdb", *args)
    sharded = _certify(tmp_path / "dask.duckdb", *args, dask=cluster.dask, shard_size=1)
    assert sharded.run.run_id == single.run.run_id
    want = table_rows(tmp_path / "single.duckdb", "certify")
    assert len(want["v4v_executions"]) > 0 and len(want["v4v_gates"]) > 0
    assert_same_rows(table_rows(tmp_path / "dask.duckdb", "certify"), want)


def test_audit_execution_stage_on_the_cluster_gives_the_single_process_rows(cluster, api_env, tmp_path,
                                                                            humanevalplus_path):
    from acceptgate.flows.audit import audit

    kw = {"limit": TASKS, "dataset": "humanevalplus", "data_path": str(humanevalplus_path)}
    single = audit(AuditRequest(warehouse=str(tmp_path / "single.duckdb"), **kw))
    state = audit(AuditRequest(warehouse=str(tmp_path / "dask.duckdb"), dask=cluster.dask, shard_size=1, **kw),
                  return_state=True)
    sharded = state.result()
    assert sharded.run_id == single.run_id
    # the shards ran on the workers as task runs of the flow run, each named after its shard function
    names = task_run_names(state.state_details.flow_run_id, 6 + TASKS)
    assert [n for n in names if n.endswith("_shard")] == ["audit_shard"] * TASKS, names
    assert {"stage_suites", "stage_execute"} <= set(names), names
    want = table_rows(tmp_path / "single.duckdb", "audit")
    assert len(want["executions"]) > TASKS and len(want["case_results"]) > 0
    assert_same_rows(table_rows(tmp_path / "dask.duckdb", "audit"), want)


def test_backfill_on_the_cluster_gives_the_single_process_rows(cluster, inputs, api_env, tmp_path,
                                                               codet_samples_path):
    """Record shards: the leak scan of a gate run (with the deliberately leaky arm, so there is something
    to find) on the cluster, against the same scan in one process."""
    import shutil

    from acceptgate.flows.backfill import backfill

    suites_dir, _ = inputs
    _gate_arms = ["conform", "hmix-leaky-gt"]
    from acceptgate.flows.gate import gate

    gate(GateRequest(certify=False, arms=_gate_arms, source=f"codet:{codet_samples_path}", suites_dir=suites_dir,
                     warehouse=str(tmp_path / "g.duckdb"), per_task=2, gauge=False))
    for name in ("single", "dask"):
        shutil.copy(tmp_path / "g.duckdb", tmp_path / f"{name}.duckdb")
    single = backfill(LeakBackfillRequest(suites_dir=suites_dir, warehouse=str(tmp_path / "single.duckdb")))
    sharded = backfill(LeakBackfillRequest(suites_dir=suites_dir, warehouse=str(tmp_path / "dask.duckdb"),
                                           dask=cluster.dask, shard_size=1))
    assert sharded.run_id == single.run_id and sharded.scanned == single.scanned == 2 * TASKS
    want = table_rows(tmp_path / "single.duckdb", "leak")
    got = table_rows(tmp_path / "dask.duckdb", "leak")
    assert {row[8] for row in want["leak_verdicts"]} >= {"violation"}
    # The hits as a set of rows (each names its hit_index): the order the table stores them in was seen
    # to differ between the two runs, the rows themselves did not.
    assert sorted(got.pop("leak_hits"), key=repr) == sorted(want.pop("leak_hits"), key=repr)
    assert_same_rows(got, want)


def _sandboxes(pid: int) -> list:
    """The sandbox processes (bubblewrap, the fork server) a worker process runs: there while one of its
    shards runs (a shard opens its backend and closes it at the end)."""
    import psutil

    out = []
    try:
        for p in psutil.Process(pid).children(recursive=True):
            try:
                if "acceptgate" in " ".join(p.cmdline()):
                    out.append(p)
            except psutil.Error:
                pass
    except psutil.NoSuchProcess:
        pass
    return out


def test_a_worker_killed_in_its_shard(cluster, inputs, api_env, tmp_path):
    """Last in the module: it leaves the cluster one worker short. Every candidate sleeps 3 s when
    loaded, so a shard (a task's conform draw on V, then its delivery on GT) runs for seconds; the
    first worker seen running sandboxes is killed (SIGKILL, its whole session) right then."""
    import threading

    import psutil

    from acceptgate.datasets import suitefiles
    from acceptgate.store import warehouse

    suites_dir, _ = inputs
    samples = tmp_path / "slow.jsonl"
    samples.write_text("".join(json.dumps({"task_id": tid, "solution": "import time\ntime.sleep(3)\n" + t.reference})
                               + "\n" for tid, t in sorted(suitefiles.read_suites(suites_dir).tasks.items())))
    source = f"evalplus:{samples}"
    killed: dict = {}

    def kill_the_first_busy_worker() -> None:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not killed:
            for name, pid in cluster.worker_pids.items():
                busy = _sandboxes(pid)
                if busy:
                    tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
                    os.killpg(cluster.procs[name].pid, signal.SIGKILL)
                    killed.update(name=name, pid=pid, tree=tree)
                    return
            time.sleep(0.05)

    watcher = threading.Thread(target=kill_the_first_busy_worker, daemon=True)
    watcher.start()
    from acceptgate.flows.gate import gate

    path = tmp_path / "dask.duckdb"
    summary = gate(GateRequest(certify=False, arms=["conform"], source=source, suites_dir=suites_dir,
                               warehouse=str(path), per_task=1, gauge=False, dask=cluster.dask, shard_size=1))
    watcher.join(timeout=60)
    assert killed, "no worker was seen running a shard"
    assert cluster.procs[killed["name"]].wait(timeout=30) == -signal.SIGKILL
    _, alive = psutil.wait_procs(killed["tree"], timeout=30)
    assert not [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]  # no orphan sandbox
    # What happens: the scheduler sees the worker gone and runs its shard again on the other worker
    # (the same Prefect task run); the run completes once, with every row, as if nothing had died.
    with warehouse.connect(path, read_only=True) as con:
        assert con.execute("select status from run_attempts").fetchall() == [("ok",)]
    single = gate(GateRequest(certify=False, arms=["conform"], source=source, suites_dir=suites_dir,
                              warehouse=str(tmp_path / "s.duckdb"), per_task=1, gauge=False))
    assert not sandbox_cgroups_of([p.pid for p in killed["tree"]]), "the killed worker's cgroups outlived the runs"
    assert summary.run.run_id == single.run.run_id
    want = table_rows(tmp_path / "s.duckdb", "gate")
    assert len(want["gate_decisions"]) == TASKS and len(want["deliveries"]) == TASKS
    assert_same_rows(table_rows(path, "gate"), want)
