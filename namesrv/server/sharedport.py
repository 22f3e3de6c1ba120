"""The listening socket the main process shares with its read workers (and hands over at a takeover)."""

import socket

from twisted.internet.address import IPv4Address, IPv6Address


def _shared_socket(port, interface):
    if not hasattr(socket, "SO_REUSEPORT"):
        raise OSError("SO_REUSEPORT is not available on this platform")
    family = socket.AF_INET6 if ":" in interface else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((interface, port))
    except Exception:
        sock.close()
        raise
    return sock


class ReservedPort:
    """The port bound (SO_REUSEPORT) but not listening: only the read workers accept on it.

    Holding it keeps the port ours while a worker restarts; a socket that does not listen
    gets no connections. ``getHost``/``stopListening`` as an IListeningPort's.
    """

    def __init__(self, port, interface="127.0.0.1"):
        self.socket = _shared_socket(port, interface)

    def getHost(self):
        host, port = self.socket.getsockname()[:2]
        kind = IPv6Address if self.socket.family == socket.AF_INET6 else IPv4Address
        return kind("TCP", host, port)

    def stopListening(self):
        self.socket.close()


def listen_shared(reactor, port, factory, interface="127.0.0.1", backlog=50):
    """Like ``reactor.listenTCP``, with SO_REUSEPORT set before bind.

    Linux then spreads new connections over every socket bound to the port by the same
    user, by a hash of the connection's addresses. Port 0 picks a free port: pass
    ``getHost().port`` of the result to the other processes.
    """
    sock = _shared_socket(port, interface)
    try:
        sock.listen(backlog)
        sock.setblocking(False)
        return reactor.adoptStreamPort(sock.fileno(), sock.family, factory)
    finally:
        sock.close()   # the reactor holds its own duplicate of the descriptor


def listening_socket(port, interface="127.0.0.1", backlog=50):
    """One listening socket for the whole server: the main process makes it, its read workers
    inherit it, and a takeover (namesrv/handover) passes it to the next main process.

    One socket rather than one per process: connections waiting in the accept queue of a
    SO_REUSEPORT socket that closes are reset, while a socket shared by descriptor lives as
    long as any process holds it, so a worker's or a whole server's exit loses none.
    """
    sock = _shared_socket(port, interface)
    try:
        sock.listen(backlog)
        sock.setblocking(False)
    except Exception:
        sock.close()
        raise
    return sock


class HeldPort(ReservedPort):
    """The listening socket held (its queue kept alive) by a main process that does not accept:
    only its read workers accept from it (exclusive mode)."""

    def __init__(self, sock):
        self.socket = sock


def adopt_listening(reactor, sock, factory):
    """Accept from ``sock`` with ``factory`` (the reactor uses its own duplicate; ``sock`` stays ours)."""
    return reactor.adoptStreamPort(sock.fileno(), sock.family, factory)


def close_listening(port):
    """Stop accepting on a port whose socket other processes share: close our descriptor only.

    Twisted's ``stopListening`` calls ``shutdown()`` first, and on Linux shutting a listening
    socket down stops it listening for every process that holds it, resetting its queue.
    """
    port._shouldShutdown = False
    return port.stopListening()
