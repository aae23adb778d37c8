"""A command verifier that never reaches a verdict, chosen by the first argument (tests only)."""
import sys
import time

how = sys.argv[1]
if how == "crash":
    raise SystemExit(3)
if how == "sleep":
    time.sleep(60)
if how == "garbage":
    print("maybe")
if how == "flood":
    sys.stdout.write("PASS\n" * 100000)
if how == "net":
    import socket
    socket.create_connection(("1.1.1.1", 80), timeout=2)
    print("PASS")
if how == "env":
    print("PASS" if set(__import__("os").environ) <= {"PWD"} else "FAIL")  # bubblewrap sets PWD only
