"""The sandbox's threat model, in one place: the README and ``acceptgate sandbox info`` show this text.

Keep it true: every guarantee below is tested by ``tests/test_attacks.py`` on every backend.
"""

THREAT_MODEL = """\
The candidate controls everything inside its sandbox: its own code, the runner's code once loaded, the
framing marker, the pipes and every byte it sends back. The marker guards against accidents, not attacks.
The trusted side (the harness) therefore trusts nothing it receives: every frame is bounded in size and
parse time before it is parsed, every comparison is total (an exception is that case's failure, never a
crash of the harness), and stored texts (type names, messages, details) are truncated. Expected values
and test code never enter the candidate's process. Nothing of one execution (files, processes, IPC,
keyrings, quotas, memory) may reach the next one.
"""
