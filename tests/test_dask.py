"""Scale-out: score shards through Prefect's DaskTaskRunner on a LocalCluster of 2 worker processes give
the same verdicts, sample by sample, as the single-process scorer."""

from __future__ import annotations


import pytest

from acceptgate import score, shards
from shard_rows import suites_and_samples

pytestmark = pytest.mark.prefect

TASKS, PER_TASK = 6, 8


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, humanevalplus_path, codet_samples_path, local_backend):
    """The first 6 HumanEval+ tasks as a suites directory, and 8 CodeT samples of each (EvalPlus format)."""
    return suites_and_samples(tmp_path_factory.mktemp("dask"), humanevalplus_path, codet_samples_path, local_backend,
                              TASKS, PER_TASK)


def test_shards_are_coarse_batches(inputs):
    loaded = shards.load_inputs(*inputs, "hidden")
    batches = shards.make_shards(loaded.sample_file, loaded.suites, loaded.prompts, shard_size=10)
    assert [len(b.samples) for b in batches] == [10, 10, 10, 10, 8]
    assert all(set(b.suites) == {s.task_id for s in b.samples} for b in batches)


def test_local_cluster_same_verdicts_as_single_process(prefect_harness, inputs, local_backend, monkeypatch):
    from prefect.settings import PREFECT_API_URL

    from flows import score_sharded

    # the Dask workers are new processes: they find the test server through the environment
    monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())
    suites_dir, samples = inputs
    sharded = score_sharded.run(suites_dir, samples, suite="hidden", dask_workers=2, shard_size=10)

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
    evalplus verdicts are the single-process ones and every row names the profile."""
    from flows import score_sharded

    suites_dir, samples = inputs
    sharded = score_sharded.score_sharded(suites_dir, samples, suite="hidden", shard_size=16, profile="evalplus")
    loaded = shards.load_inputs(suites_dir, samples, "hidden", profile="evalplus")
    assert set(loaded.timing) == set(loaded.suites)
    single = score.score_samples(loaded.sample_file, loaded.suites, loaded.prompts, local_backend, suite="hidden",
                                 excluded=loaded.excluded, profile="evalplus", reference_seconds=loaded.timing)
    assert {r.profile for r in sharded.report.rows} == {"evalplus"}
    assert [(r.task_id, r.sample_index, r.verdict) for r in sharded.report.rows] == [
        (r.task_id, r.sample_index, r.verdict) for r in single.rows]
