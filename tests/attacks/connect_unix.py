# Connect to an abstract unix socket the harness side opened (no file needed to reach it).
import socket


def f(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0" + name)
        s.sendall(b"hello")
        return "connected"
    except OSError as exc:
        return "blocked: " + type(exc).__name__
    finally:
        s.close()
