"""Imported by every LocalCluster worker as it starts (``flows.dask_runner.PRELOAD``): what the first
shard would otherwise import while the client waits for it -- Prefect's task engine, the generic step
task every shard runs in, and the core the shard functions call. An entry point: it applies
acceptgate's offline Prefect settings before Prefect is imported."""

from acceptgate.tasks import _prefect_env

_prefect_env.apply()


import prefect.task_engine  # noqa: F401,E402

import acceptgate.sandbox.local  # noqa: F401,E402
import acceptgate.pipelines.shards  # noqa: F401,E402
import acceptgate.v4v.certify  # noqa: F401,E402
import acceptgate.tasks.run_tasks  # noqa: F401,E402
import acceptgate.gates.delivery  # noqa: F401,E402
import acceptgate.gates.run  # noqa: F401,E402
import acceptgate.sources  # noqa: F401,E402
