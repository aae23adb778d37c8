# Connect to a listener the harness side opened on 127.0.0.1.
import socket


def f(port):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=1)
        s.sendall(b"hello from the sandbox")
        s.close()
        return "connected"
    except OSError as exc:
        return "blocked: " + type(exc).__name__
