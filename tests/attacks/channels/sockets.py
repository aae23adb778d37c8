# Every socket family the kernel knows (AF_VSOCK's port space is the whole machine's): answers the
# families for which socket() succeeded, and the non-AF_UNIX families socketpair() accepted.
import socket

FAMILIES = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16, "AF_PACKET": 17, "AF_KEY": 15,
            "AF_ALG": 38, "AF_VSOCK": 40, "AF_TIPC": 30, "AF_BLUETOOTH": 31, "AF_CAN": 29, "AF_XDP": 44}


def f(x):
    opened = []
    for name, family in FAMILIES.items():
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_SEQPACKET):
            try:
                socket.socket(family, kind).close()
            except OSError:
                continue
            opened.append(name)
            break
    for name, family in FAMILIES.items():
        if family != 1:
            try:
                a, b = socket.socketpair(family, socket.SOCK_STREAM)
                a.close(), b.close()
                opened.append("socketpair " + name)
            except OSError:
                pass
    return opened
