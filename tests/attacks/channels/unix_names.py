# Abstract unix socket names without socket(): socketpair(AF_UNIX) is allowed, and its sockets can
# still be bound to a name, send to a name (sendto, sendmsg) and be kept alive past every process of
# the execution by sending them into themselves (an SCM_RIGHTS cycle that only the kernel's unix
# garbage collector frees). Abstract names belong to the network namespace.
#   f("record", token, _): bind names carrying the token and leave them in flight; what worked
#   f("find", token, _): [the "agun-<n>-<n>" names this network namespace lists, whether the token's name is taken]
#   f("reach", _, name): a datagram to the host's abstract name, by sendto and by sendmsg; what worked
import array
import socket


def _name(token, kind):
    return ("\0agun-%d-%d" % (token, kind)).encode()


def f(mode, token, host_name):
    done = []
    if mode == "record":
        for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
            a, b = socket.socketpair(socket.AF_UNIX, kind)
            try:
                a.bind(_name(token, kind))
                done.append("bound")
            except OSError:
                continue
            try:
                b.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [a.fileno(), b.fileno()]))])
                done.append("in flight")
            except OSError:
                pass
        return done
    if mode == "find":
        try:
            with open("/proc/self/net/unix") as fh:
                # names as "record" makes them (the host's "agun-host-..." of a test running beside is not one)
                names = [line.split()[-1] for line in fh.read().splitlines()[1:]
                         if "@agun-" in line and line.split()[-1][6:].replace("-", "").isdigit()]
        except OSError:
            names = []
        a, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            a.bind(_name(token, socket.SOCK_DGRAM))
            taken = False
        except OSError as exc:
            taken = exc.errno == 98  # EADDRINUSE: someone holds it (EPERM: binding is refused)
        return [names, taken]
    a, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        a.sendto(b"agun sendto", host_name)
        done.append("sendto")
    except OSError:
        pass
    try:
        a.sendmsg([b"agun sendmsg"], [], 0, host_name)
        done.append("sendmsg")
    except OSError:
        pass
    return done
