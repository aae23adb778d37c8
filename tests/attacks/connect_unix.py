# Connect to an abstract unix socket the harness side opened (no file needed to reach it).
import socket


def f(name):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect("\0" + name)
            s.sendall(b"hello")
        return "connected"
    except OSError as exc:  # refused, or no socket at all (the syscall filter)
        return "blocked: " + type(exc).__name__
