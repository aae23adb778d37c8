"""The sandbox's threat model, in one place: the documentation's sandbox page (docs/sandbox.md) and ``acceptgate sandbox info`` show this text.

Keep it true: every guarantee below is tested by ``tests/test_attacks.py`` (and the sandbox tests it
names) on every backend.
"""

THREAT_MODEL = """\
Who controls what. The candidate controls everything inside its sandbox: its own code, the runner's
code once the candidate is loaded (it can reach the runner's frames, its send function and the marker),
the pipes and every byte sent back. The framing marker guards against accidents (a stray print), not
attacks. The trusted side (the harness process) holds the expected values and the comparison; they
never enter the candidate's process, and the harness trusts nothing it receives.

What the harness guarantees whatever the answer:
- Every frame is bounded on its header before its payload is read: a result (ok) at most 16 MiB and
  dropped unread beyond what any expected value could need; an error report or any other frame at most
  64 KiB. Answers are parsed by a repr-only literal parser (sandbox/answers.py) that is linear in time
  and memory, checks a CPU-time budget of the harness while it parses, and refuses sets and dicts whose
  elements share one hash value (quadratic to build). Without fail-fast the answers are held unjudged
  (in memory up to 64 MiB, beyond that in an unlinked temporary file; each within its case's bound)
  and judged once the runner is gone; with it, the time the harness spends judging an answer stops
  the candidate's clocks, so a loaded machine cannot turn the harness's work into the candidate's
  timeout. Peak memory stays under 1 GiB and the harness's CPU time under the execution's
  limit + 5 s (tests/attacks: huge_error_frame, huge_result_frames, colliding_set, ...).
- Every comparison and digest rule is linear in the answer, hash-colliding elements included: set
  equality sorts the elements' equality forms instead of hashing them, and the digest's memo keeps only
  strings (whose hashes are seeded per process) (tests/attacks: colliding_list_set_eq,
  colliding_list_digest: 1 MiB of ints that all hash to 0).
- Every comparison is total: an exception while comparing (e.g. OverflowError from 10**400 against a
  float in a tolerance dialect) is that case's fail, and any other failure of the harness on one answer
  is that execution's protocol: a batch (score, gate, audit) never loses other samples' results.
- Stored texts are truncated: exception type names 200 characters, messages and shown values 1,000,
  details 2,000.

What the sandbox guarantees between executions: nothing of one execution (files, processes, IPC,
sockets, keyrings, per-user kernel quotas, memory, locks, filesystem caches, inputs it was not yet
given) reaches the next one or one running beside it. Each execution gets fresh namespaces and a root
of its own; every backend loads one seccomp deny list (sandbox/seccomp.py); as root, each fork-server
slot, Docker container and local-rlimits execution runs as a host uid of its own, so executions running
at once share no per-user quota (pipe buffers, keys). A backend that lacks a layer on this host
(local-rlimits: no namespaces) names it in isolation.not_enforced, which every result carries.

Outcomes are not observable inside an execution, but for one bit per block. A store of one bit that
outlives an execution would turn fail-fast into an oracle (being called for case k+1 proves that the
answer to case k passed). So on a hidden suite (score, gauge, delivery, certify, the layer-4
experiment, serve-api's scoring) the cases are called in blocks fixed before the run from their number
alone: a first block of min(n, 64) cases, then blocks each twice the size of the one before (every
result carries the plan as blocks). Within a block every case is called whatever the earlier answers
were and the answers are held unjudged; at the end of a block, the runner waiting, the harness judges
every answer of the block, and the execution ends there if one failed; the last block's answers are
judged once the runner is gone. What a block boundary reveals is being called again: every answer so
far passed -- one bit per block, and only ever "all passed". To get it a candidate must have the whole
block right (64 answers the first time), so it learns nothing it did not already have: not which answer
failed, nor any answer it guessed, unless it guessed all 64 at once. What the harness does at a
boundary, and so the time the candidate waits there (before its next call, or before it is ended),
does not depend on which answers passed: every answer of the block is judged, in case order and with
no early exit, each the same way -- parsed and compared in full, no shortcut for an answer spelled as
its expected value, nothing shown for a failing one until the runner is gone. What is left to vary is
the parse, which follows the candidate's own text, and a comparison that may stop at its first
difference, bounded by the case's answer size limit (a few microseconds per answer on HumanEval+,
within a loaded machine's scheduling noise). And the notes channel a bit would need is closed by
construction (below): a later execution finds nothing this one noted, but through the noisy counters
of residual (1) (tests/test_channels.py: a_candidate_failing_case_0_of_a_long_hidden_suite_is_called_
for_the_first_block_only; a_block_is_judged_at_its_end_the_same_way_whichever_answers_passed: the same
judge calls, all between the block's last answer and the next call; every_answer_is_judged_only_after_
the_last_one; a learner that keeps notes in every kernel state it can reach never passes in 50
executions, one at a time and as 50 samples of a batch, where with a fail-fast oracle it passes within
a few on local-rlimits: learner_keeping_notes_never_passes_a_hidden_suite). Every case in one block
(score --all-cases, exec --all-cases, the audit's executions of its own references and wrong samples)
is asked for by name; fail-fast stays where nothing is hidden (a visible suite, exec --fail-fast).

Filesystems by construction. Every name an execution can look up resolves in a root made for that
execution alone: a tmpfs (its own superblock, so its own dentries, inodes and pages, dropped with its
mount namespace) holding /proc (a new procfs of its pid namespace with pids only: subset=pid, no global
file, no /proc/sys), /sandbox, /tmp and /dev/shm (a tmpfs each) and the five device nodes, each a bind
of one file. The runner moves into it (pivot_root, the old root detached) after it has loaded what it
needs and before the candidate's code exists; no directory of the host or of Docker's image is left in
its mount namespace, so no absent name it looks up leaves a negative dentry another execution could
find (openat2 RESOLVE_CACHED, a stat's time), and no file it reads is another's. What it imports comes
from memory: the fork server holds the standard library compiled (sandbox/stdlib_image.py, read once
before any execution) and serves it with a meta-path finder; the extension modules of lib-dynload are
imported by the fork server. The same fork server (sandbox/zygote.py) runs in every local slot, for
each local-bwrap execution (one-shot) and inside each Docker container (the keeper starts it in
namespaces of its own) (tests/test_channels.py: no_name_one_execution_looks_up_is_cached_for_a_later_one).
Each shared resource, and how it is closed (tests/test_channels.py runs an attack per class on local,
local-bwrap, local-rlimits and docker):
- Inputs: a hidden suite's block is written ahead, as the runner's input takes it (each of its calls is
  made whatever the answers, so a call learns nothing it would not be sent anyway); the next block only
  after the block's last answer has been read and the block judged, so a candidate that reads its
  input pipe or the runner's buffer ahead holds no later block's input. Fail-fast (a visible suite):
  one call at a time, case k+1's arguments written only after case k's answer has been read, so a
  candidate that fails case k holds no later case's input. Each case's clocks start when the previous
  answer is read; the CPU the runner spends on a case before the harness first waits for its answer
  (the harness's own few steps) is not charged to that case, only to the execution.
- Sockets: socket() is denied for every family, socketpair() for all but AF_UNIX (anonymous). AF_VSOCK
  ports are the whole machine's, outside any network namespace; without a network namespace
  (local-rlimits) so are the host's loopback and abstract unix names; a reused container can keep TCP
  TIME_WAIT entries. A socketpair's socket could still be bound to an abstract unix name, address one
  and be sent into itself (SCM_RIGHTS: a cycle that outlives the execution until the kernel's unix
  collector runs), reaching the host's names (local-rlimits) or a later execution in a reused
  container (docker): bind, connect, listen, accept, sendto with an address, sendmsg and sendmmsg are
  denied too (on docker the runner adds sendmsg, sendmmsg, socket and connect to the container's
  profile, which leaves them to the keeper). The protocol is two pipes and needs no socket. So an
  execution's only sockets are socketpairs its own processes hold, gone with them: the fork server's
  executions use their slot's network namespace one at a time (a new one per execution cost a fifth of
  its CPU), and before it builds each execution's environment the fork server checks that the
  namespace holds no socket, or the slot is discarded.
- Locks and watches on the files every execution reads: fcntl's POSIX and OFD byte-range lock, lease
  and notify commands, flock(), inotify and fanotify are denied.
- System V IPC and POSIX message queues: denied (the host's own where there is no IPC namespace, and a
  reused container's otherwise).
- Keyrings (per host uid, outside every namespace): denied.
- The scheduling state of the processes a reused container keeps: its keeper and fork server can be
  reniced, re-pinned to other CPUs, given another I/O priority or lower resource limits by any
  process of their uid (no ptrace needed), and every runner the fork server forks later would
  inherit that. The keeper compares their nice value, CPU mask, scheduling policy, I/O priority and
  resource limits after every execution with what they were at its start; a change retires the
  container. (A fork-server slot's candidate sees only its own pid namespace.)
- Page cache of the host files an execution can still read: only those mapped into its process (the
  interpreter, the libraries it and the preloaded extension modules load, those modules), reachable as
  /proc/self/exe and never as a directory. The calls that evict or probe pages are denied (fadvise,
  readahead, mincore, cachestat, process_madvise, madvise WILLNEED/REMOVE/MERGEABLE/COLD/PAGEOUT/
  POPULATE_*/COLLAPSE, preadv2/pwritev2 with any flag such as RWF_NOWAIT, Linux AIO, io_uring, KSM
  merging). What no filter can deny -- a read or fault that loads a page, and telling a resident page
  from an absent one by the pages a fault maps around it (/proc/self/smaps) or by a read's time -- is
  closed by construction: the harness keeps those files mapped and locked in memory (mlock) from its
  first backend until it exits (sandbox/residency.py; 41 files, 18 MiB for the local backends here,
  where the whole view the executions could read was about 1 GiB before each had a root of its own;
  Docker's image layers, about 50 MB), so there is no page to load or evict, and they are not charged
  to any execution's memory cgroup; where mlock is refused or the set is over 2 GiB, it is re-read
  every 300 s instead (tests/test_channels.py: a_pinned_view_stays_resident_whatever_the_host_evicts).
- Residual risks, not closed (each with the test that bounds it):
  (1) global counters of the kernel that any execution can move and a later one read: the pseudo
  inode numbers of pipes, sockets and procfs entries (one counter for the machine, in per-CPU
  batches: an execution that makes 300 pipes moves the next one's first pipe number by 300, with the
  host's own activity as noise) and pidfs inode numbers (moved by every fork). A few noisy bits per
  execution; no outcome of a hidden suite is observable inside an execution to be noted there, and a
  hidden input carried this way reaches only another candidate, whose answers are judged the same way
  (learner_keeping_notes_never_passes_a_hidden_suite). A user-space kernel per container (gVisor's
  runsc as Docker's runtime) would own these counters per sandbox: see the benchmarks page's measurement (docs/benchmarks.md).
  (2) Where the mapped files are not pinned (mlock refused, or over 2 GiB), pages the host itself
  evicts after the harness's check can be loaded again by one execution and seen by a later one.
  (3) local-rlimits has no namespaces: every host file and directory can be named, so their page
  cache and dentry cache carry notes between its executions (named in isolation.not_enforced;
  no_name_one_execution_looks_up_is_cached_for_a_later_one, pages_one_execution_loads_are_no_news_to_
  the_next); it relies on outcomes not being observable. On docker, where the keeper cannot start the
  fork server, executions share the container's and the image's filesystem (named in not_enforced).
  (4) Executions running at the same time share the CPUs and the machine's memory (sysinfo() shows the
  free memory and the load): a noisy covert channel between two executions of one batch, which needs a
  receiver running at the same moment (a_lock_on_a_shared_file_is_invisible_to_a_parallel_execution
  covers the locks). (5) Memory a fork server shares copy-on-write with its runners: on a host with
  swap, a page swapped out and faulted back by one execution is resident for the next (this machine
  kind has no swap; the slots' memory cap counts swap:
  no_page_a_fork_server_shares_can_be_swapped_out_between_executions).

Reproducible verdicts: every sandboxed interpreter hashes strings with one fixed seed (PYTHONHASHSEED
0, recorded as hash_seed in every result), so a program whose answer depends on it (iterating a set of
strings) gets the same verdict in every run, on every backend and machine with the same Python
(tests/test_backend_conformance.py: a_program_that_depends_on_the_hash_seed_gets_one_verdict). One
seed for all, not one per execution: a fork server's runners inherit the hash secret fixed at its
start, which no later change could reach without breaking every string already hashed.

Verdict categories are what the harness observed, except where noted:
- pass / fail: the harness's own comparison of a parsed answer. Only pass matters for delivery, gates
  and statistics; a candidate can always turn its own pass into a non-pass, never the reverse.
- timeout: a time limit (the execution's, its load's where one is set, and each case's), which holds
  on two clocks that the harness reads on the host, where the candidate cannot touch them: the CPU
  time of the sandbox's processes (a cgroup's counter), and their wall time less the time they waited,
  runnable, for a CPU (the kernel's run-queue delay per task, /proc/PID/schedstat; decided only while
  none of them is runnable, so a wait not yet accounted never counts), so a sleep meets the limit and
  a busy machine neither. The load of the machine does not decide it: a program starved of CPU gets
  the same verdict. A timeout on the second clock, or on the wall-clock backstop (max(3 x the limit,
  the limit + 20 s), for a host too loaded to run the program at all), is recorded apart
  (timeout_clock "wall", detail "time limit: ... (wall time less N s waiting for a CPU)" or
  "wall-clock backstop: ..."). SIGXCPU counts once the counter shows at least half the runner's CPU
  rlimit used (the rlimit runs on the kernel's tick-sampled clock, ahead of the counter on a loaded
  machine; without a counter: the wall clock is the limit, and SIGXCPU counts after the execution ran
  long enough to have used its CPU limit on every core). An earlier SIGXCPU is the candidate's own
  signal: crash.
- memory: an OOM kill the cgroup or the container recorded during the execution, whoever the kernel
  chose (also when the runner answered every case: a forked child was killed and the runner went on;
  which process dies is a matter of timing, so of load, and the limit being hit is not), or a
  MemoryError the runner reports. The
  report is the runner's claim: a candidate that takes over the runner can forge it (never a class of
  its own named MemoryError, which is reported with its module, e.g. candidate.MemoryError: error).
- error: an exception the runner reports (its type name and message are the runner's claim).
- crash: a signal ended the runner or its init, including a signal the candidate sent itself.
- protocol: a frame that breaks the protocol, or a runner that exited before answering.
So a candidate can choose among the non-pass categories (memory, error, crash, protocol, and timeout by
waiting); no downstream use gives a non-pass category any credit, and the gates, V4V and the statistics
count only pass.
"""

