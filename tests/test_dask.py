"""Scale-out: score shards through Prefect's DaskTaskRunner on a LocalCluster of 2 worker processes give
the same verdicts, sample by sample, as the single-process scorer."""

from __future__ import annotations


import pytest

from acceptgate.scoring import score

from acceptgate.pipelines import shards
from acceptgate.pipelines.daskcluster import DaskCluster
from shard_rows import suites_and_samples, task_run_names

pytestmark = pytest.mark.prefect

TASKS, PER_TASK = 3, 8  # 24 samples in 5 shards of 5: both workers get shards, pass and fail among them


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, humanevalplus_path, codet_samples_path, local_backend):
    """The first 3 HumanEval+ tasks as a suites directory, and 8 CodeT samples of each (EvalPlus format)."""
    return suites_and_samples(tmp_path_factory.mktemp("dask"), humanevalplus_path, codet_samples_path, local_backend,
                              TASKS, PER_TASK)


def test_shards_are_coarse_batches(inputs):
    loaded = shards.load_inputs(*inputs, "hidden")
    batches = shards.make_shards(loaded.sample_file, loaded.suites, loaded.prompts, shard_size=5)
    assert [len(b.samples) for b in batches] == [5, 5, 5, 5, 4]
    assert all(set(b.suites) == {s.task_id for s in b.samples} for b in batches)


def test_local_cluster_same_verdicts_as_single_process(prefect_harness, inputs, local_backend, monkeypatch):
    from prefect.settings import PREFECT_API_URL

    from acceptgate.flows import score_sharded

    # the Dask workers are new processes: they find the test server through the environment
    monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())
    suites_dir, samples = inputs
    sharded = score_sharded.run(suites_dir, samples, suite="hidden", dask="2", shard_size=5)

    loaded = shards.load_inputs(suites_dir, samples, "hidden")
    single = score.score_samples(loaded.sample_file, loaded.suites, loaded.prompts, local_backend, suite="hidden",
                                 excluded=loaded.excluded)
    key = lambda r: (r.task_id, r.sample_index)  # noqa: E731
    assert len(single.rows) == TASKS * PER_TASK
    assert [key(r) for r in sharded.report.rows] == [key(r) for r in single.rows]
    assert [r.verdict for r in sharded.report.rows] == [r.verdict for r in single.rows]
    assert [r.cases_failed for r in sharded.report.rows] == [r.cases_failed for r in single.rows]
    assert {r.verdict for r in single.rows} >= {"pass", "fail"}  # a comparison with something in it
    assert sharded.shards == 5 and sum(sharded.samples_by_worker.values()) == TASKS * PER_TASK
    assert len(sharded.samples_by_worker) == 2, sharded.samples_by_worker  # both workers took shards


def test_sharded_flow_takes_the_evalplus_profile(prefect_harness, inputs, local_backend):
    """The sharded flow (here on Prefect's default runner) carries each shard's reference times, so its
    evalplus verdicts are the single-process ones and every row names the profile. Each shard is a task
    run named after its shard function."""
    from acceptgate.flows import score_sharded

    suites_dir, samples = inputs
    state = score_sharded.score_sharded(suites_dir, samples, suite="hidden", shard_size=8, profile="evalplus",
                                        return_state=True)
    sharded = state.result()
    assert task_run_names(state.state_details.flow_run_id, 3) == ["score_shard"] * 3  # 24 samples in 3 shards
    loaded = shards.load_inputs(suites_dir, samples, "hidden", profile="evalplus")
    assert set(loaded.timing) == set(loaded.suites)
    single = score.score_samples(loaded.sample_file, loaded.suites, loaded.prompts, local_backend, suite="hidden",
                                 excluded=loaded.excluded, profile="evalplus", reference_seconds=loaded.timing)
    assert {r.profile for r in sharded.report.rows} == {"evalplus"}
    assert [(r.task_id, r.sample_index, r.verdict) for r in sharded.report.rows] == [
        (r.task_id, r.sample_index, r.verdict) for r in single.rows]


def test_the_local_workers_temp_dir_keeps_the_namespaced_sandbox(tmp_path):
    """`score --dask N` points the workers' TMPDIR at a directory of its own; the sandbox stages its bwrap
    copy there for the sandbox uid, so that directory must be traversable (once it was 0700, and every
    worker's sandbox silently fell back to rlimits only)."""
    import subprocess
    import sys

    probe = (
        "import os, stat\n"
        "from acceptgate.cli import score_cmd\n"
        "path = score_cmd._workers_temp_dir()\n"
        "import tempfile; tempfile.tempdir = None\n"
        "assert tempfile.gettempdir() == path, (tempfile.gettempdir(), path)\n"
        "assert stat.S_IMODE(os.stat(path).st_mode) & 0o001, oct(os.stat(path).st_mode)\n"
        "from acceptgate.sandbox import backend as backends\n"
        "from acceptgate.sandbox.backend import Limits\n"
        "with backends.create('local') as b:\n"
        "    print(' | '.join(b.isolation(Limits()).enforced))\n"
    )
    env = {**__import__("os").environ, "TMPDIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "namespaces: user, pid, net" in out.stdout, out.stdout + out.stderr[-2000:]
    assert "rlimits only" not in out.stdout + out.stderr


def _worker_malloc_trim() -> str | None:
    import os

    return os.environ.get("MALLOC_TRIM_THRESHOLD_")


def test_local_cluster_workers_do_not_trim_malloc_on_every_free(prefect_harness, monkeypatch):
    """distributed's Nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which made a certify shard
    1.5-3x slower on a worker than in-process (bench/bench_dask_overhead.py); our LocalCluster unsets it."""
    from prefect import task
    from prefect.settings import PREFECT_API_URL

    from acceptgate.flows import dask_runner

    monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    probe = task(lambda shard: _worker_malloc_trim(), name="malloc-trim-probe")
    with dask_runner.task_runner(DaskCluster(workers=1)) as runner:
        future = runner.submit(probe, parameters={"shard": 0})
        assert future.result() is None
