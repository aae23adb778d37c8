"""A flaky command verifier for the tests: its answer depends on the time and pid, not the candidate."""
import os
import time

print("PASS" if (time.time_ns() // 1000 + os.getpid()) % 2 else "FAIL")
