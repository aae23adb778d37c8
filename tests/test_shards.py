"""The sharded execution path (``acceptgate.pipelines.shards``) without a cluster: shards that cross a pickle
round trip (as they do to a Dask worker), run one by one and merged on the client, give the
single-process rows of the gate and certify stages, row for row (times aside)."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from acceptgate.pipelines import shards
from acceptgate._util.errors import InvalidInput
from shard_rows import assert_same_rows, frame_rows

TASKS = 3


@pytest.fixture(scope="module")
def suites_dir(tmp_path_factory, humanevalplus_path, local_backend):
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.importers import humanevalplus

    result = humanevalplus.load(humanevalplus_path, local_backend, limit=TASKS)
    return str(suitefiles.write_suites(result, tmp_path_factory.mktemp("shards") / "suites"))


def _rows(frames) -> dict[str, list[tuple]]:
    return {t: frame_rows(f) for t, f in frames.items()}


def _travel(obj):
    """What a Dask worker receives: a copy, through pickle (no shared objects, no shared paths)."""
    return pickle.loads(pickle.dumps(obj))


def test_split():
    assert shards.split(list(range(5)), 2) == [[0, 1], [2, 3], [4]]
    with pytest.raises(InvalidInput, match="at least 1"):
        shards.split([1], 0)


def test_gate_shards_give_the_single_process_rows(suites_dir, codet_samples_path, local_backend):
    from acceptgate.gates import delivery
    from acceptgate.gates import HmixCaps, arm_tasks, run_arm
    from acceptgate.gates import run as core
    from acceptgate.sources.codet import CodetSource

    arms, per_task = ["conform", "hmix", "off"], 3
    tasks = core.load_task_set(backend=local_backend, suites_dir=suites_dir).tasks
    source = CodetSource(codet_samples_path, per_task=per_task)
    single = [o for arm in arms for o in run_arm(arm, arm_tasks(arm, tasks), source, local_backend,
                                                  caps=HmixCaps(calls=per_task))]
    single_rows = delivery.score_deliveries(single, core.hidden_suites(tasks), local_backend)

    batches = shards.gate_shards(tasks, source, shard_size=2)
    assert [len(b.tasks) for b in batches] == [2, 1]
    assert set(batches[1].source.rows) == {tasks[2].task_id}  # a shard carries only its tasks' candidates
    # reversed: the merge orders by shard, not by arrival
    results = [_travel(shards.gate_shard(_travel(b), arms, "local", source_spec="unused", per_task=per_task))
               for b in reversed(batches)]
    outcomes, rows, seconds, by_worker = shards.merge_gate(arms, results)
    run = core.make_run(source="openai", tasks=tasks, tasks_from="t", arms=arms, per_task=per_task, backend="local",
                        run_id="gate-shards")
    want = _rows({**core.gate_frames(run, single), **core.delivery_frames(run, single_rows)})
    got = _rows({**core.gate_frames(run, outcomes), **core.delivery_frames(run, rows)})
    assert_same_rows(got, want)
    assert len(want["gate_decisions"]) == len(arms) * TASKS
    assert {r.gt_verdict for r in single_rows if r.delivered} >= {"pass"}
    assert set(seconds) == {*arms, "deliveries"} and sum(by_worker.values()) == TASKS


def test_certify_shards_give_the_single_process_rows(suites_dir, humanevalplus_path, codet_samples_path,
                                                     local_backend):
    from acceptgate.v4v import certify as C
    from acceptgate.v4v import store
    from acceptgate.v4v.pools import PoolSettings

    settings = C.Settings(pool=PoolSettings(samples_per_task=2), repeat_sample=0, workers=2)
    materials = C.load_materials(suites_dir, str(humanevalplus_path), str(codet_samples_path))
    single = C.certify(materials, local_backend, settings)
    results = [_travel(shards.certify_shard(_travel(b), "local", settings))
               for b in reversed(shards.certify_shards(materials, shard_size=2))]
    merged = shards.merge_certify(materials, results, settings)
    run = store.make_run(materials, settings, suites_from=suites_dir, dataset_from="d", samples_from="s",
                         backend="local", run_id="certify-shards")
    want = _rows({**store.pool_frames(run, single), **store.certification_frames(run, single)})
    got = _rows({**store.pool_frames(run, merged), **store.certification_frames(run, merged)})
    assert_same_rows(got, want)
    assert len(want["v4v_executions"]) > 0 and len(want["v4v_gates"]) > 0
    assert C.format_table(merged.reports) == C.format_table(single.reports)
    # the shards judged their tasks and sent the runs back as stored text, not every returned value
    assert all(r.values == [] and r.stored is not None for r in merged.runs.values())
    assert {"backend", "judge", "report"} <= set(merged.seconds)


def test_nightly_hands_dask_to_the_sharded_stages(tmp_path):
    from acceptgate.pipelines import schedule
    from acceptgate.pipelines.daskcluster import DaskCluster
    from acceptgate.pipelines.requests import NightlyRequest

    cluster = DaskCluster(workers=2)
    files = {n: tmp_path / n for n in ("suites", "hep.jsonl", "codet.jsonl")}
    files["suites"].mkdir()
    for f in ("hep.jsonl", "codet.jsonl"):
        files[f].write_text("")
    nightly = NightlyRequest(warehouse="w.duckdb", dask="2", shard_size=3, gate_suites=str(files["suites"]),
                             certify_dataset=str(files["hep.jsonl"]), gate_source=f"codet:{files['codet.jsonl']}")
    assert nightly.dask == cluster
    for name in ("audit", "certify", "gates"):  # the stages whose work runs in shards
        stage = next(s for s in schedule.NIGHTLY_STAGES if s.name == name)
        request = stage.request(nightly, {})
        assert (request.dask, request.shard_size) == (cluster, 3), name


def test_nightly_refuses_a_bad_dask_value_before_any_stage():
    from acceptgate.pipelines import requests

    for value in ("0", "tcp://127.0.0.1:9"):
        with pytest.raises(InvalidInput) as err:
            requests.build(requests.NightlyRequest, {"warehouse": "w.duckdb", "dask": value})
        assert err.value.field == "dask"


def test_cli_dask_errors_exit_2_before_any_work(tmp_path, suites_dir, humanevalplus_path, codet_samples_path, capsys):
    from acceptgate.cli import main

    path = tmp_path / "w.duckdb"
    for argv in (["gate", "--no-certify", "--arm", "off", "--source", f"codet:{codet_samples_path}", "--suites",
                  suites_dir],
                 ["certify", "--suites", suites_dir, "--dataset", str(humanevalplus_path)],
                 ["audit", "--dataset", "humanevalplus", "--path", str(humanevalplus_path)]):
        for bad, field in ((["--dask", "0"], "--dask"), (["--dask", "2", "--shard-size", "0"], "--shard-size")):
            assert main(argv + ["--warehouse", str(path)] + bad) == 2, argv + bad
            assert field in capsys.readouterr().err
            assert not path.exists()


def test_certify_shards_start_the_largest_first(suites_dir, humanevalplus_path, codet_samples_path):
    from acceptgate.v4v import certify as C

    materials = C.load_materials(suites_dir, str(humanevalplus_path), str(codet_samples_path))
    batches = shards.certify_shards(materials, shard_size=1)
    costs = [b.cost() for b in batches]
    assert costs == sorted(costs, reverse=True) and len(set(costs)) > 1  # these tasks' suites differ in size
    # the index still names the task order, which the merge restores
    assert sorted((b.index, b.materials[0].task_id) for b in batches) == list(enumerate(m.task_id for m in materials))
    assert [b.index for b in batches] != list(range(len(batches)))  # so the order really changed here


def test_certify_shards_take_the_last_certifications_times(suites_dir, humanevalplus_path, codet_samples_path):
    """Without history the order is a guess from the suites (cases, and the reference's measured time);
    with it (task -> seconds of its last certification) the task that took longest goes first."""
    from acceptgate.v4v import certify as C

    materials = C.load_materials(suites_dir, str(humanevalplus_path), str(codet_samples_path))
    assert all(m.reference_seconds > 0 for m in materials)  # the import's timing sidecars, summed
    slow = max(materials, key=lambda m: m.reference_seconds)
    assert shards.task_cost(slow) > shards.task_cost(dataclasses.replace(slow, reference_seconds=0.0))
    guessed = [b.materials[0].task_id for b in shards.certify_shards(materials, shard_size=1)]
    last = guessed[-1]
    ordered = [b.materials[0].task_id for b in shards.certify_shards(materials, 1, {last: 1000.0})]
    assert ordered == [last] + guessed[:-1]
    assert shards.task_cost(materials[0], {materials[0].task_id: 12.5}) == 12.5


def test_a_task_material_compiles_its_harnesses_where_they_are_first_read(suites_dir, humanevalplus_path):
    """An unpickled copy (what Dask's tokenizer and its scheduler make in the client) carries the suites
    and compiles its harnesses only when something reads them; a copy of a copy loses nothing."""
    from acceptgate.v4v import certify as C

    material = C.load_materials(suites_dir, str(humanevalplus_path))[0]
    assert "harnesses" not in material.__dict__  # loading compiles nothing either: the client may only ship it
    copy = pickle.loads(pickle.dumps(material))
    assert "harnesses" not in copy.__dict__  # nothing compiled by the unpickling itself
    again = pickle.loads(pickle.dumps(copy))  # pickling an uncompiled copy compiles nothing either
    assert "harnesses" not in copy.__dict__
    for m in (copy, again):
        assert sorted(m.harnesses) == sorted(material.harnesses)
        assert all(m.harnesses[k].spec_hash == material.harnesses[k].spec_hash for k in material.harnesses)
    assert (copy.task_id, copy.gold, copy.suites, copy.samples) == (material.task_id, material.gold, material.suites,
                                                                    material.samples)
    with pytest.raises(AttributeError):
        copy.no_such_attribute  # noqa: B018


def test_results_that_do_not_answer_their_shard_are_never_merged(suites_dir, tmp_path):
    """A worker's result is checked against what was sent: a score shard's rows must be its samples in
    order (rows for other samples -- say, one wrong program's 'pass' copied over another's -- are
    refused), one result per shard, of its kind and index; a gate shard's outcomes are its tasks."""
    import json
    from types import SimpleNamespace

    from acceptgate.datasets import suitefiles
    task_ids = sorted(suitefiles.read_suites(suites_dir).tasks)[:2]
    samples = tmp_path / "s.jsonl"
    samples.write_text("".join(json.dumps({"task_id": t, "completion": f"    return {i}\n"}) + "\n"
                               for t in task_ids for i in range(2)))
    loaded = shards.load_inputs(suites_dir, str(samples), "hidden")
    batches = shards.make_shards(loaded.sample_file, loaded.suites, loaded.prompts, shard_size=2)
    results = [_travel(shards.score_shard(_travel(b), "local", suite="hidden")) for b in batches]
    shards.check_results(batches, results)  # the honest results pass
    first, second = results
    forged = [
        [first, dataclasses.replace(second, rows=first.rows)],  # another shard's rows
        [first, dataclasses.replace(second, rows=second.rows[:1])],  # a row missing
        [first, dataclasses.replace(second, rows=list(reversed(second.rows)))],  # rows of other samples, in order
        [first, dataclasses.replace(second, index=first.index)],  # answers the wrong shard
        [first],  # a shard unanswered
        [first, SimpleNamespace(index=1, rows=second.rows)],  # not a shard result
    ]
    for bad in forged:
        with pytest.raises(shards.ShardResultMismatch):
            shards.check_results(batches, bad)
    gate = shards.GateShard(0, [SimpleNamespace(task_id="T/1"), SimpleNamespace(task_id="T/2")], None)
    honest = shards.GateShardResult(0, {"off": [SimpleNamespace(task_id="T/1"), SimpleNamespace(task_id="T/2")]},
                                    [], {}, "w")
    shards.check_results([gate], [honest])
    with pytest.raises(shards.ShardResultMismatch, match="outcomes are not its tasks"):
        shards.check_results([gate], [shards.GateShardResult(0, {"off": [SimpleNamespace(task_id="T/2")]}, [], {}, "w")])
