"""The listening socket the main process shares with its read workers (and hands over at a takeover)."""

import socket

from twisted.internet.address import IPv4Address, IPv6Address


def listening_socket(port, interface="127.0.0.1", backlog=50):
    """One listening socket for the whole server: the main process makes it, its read workers
    inherit it, and a takeover (namesrv/handover) passes it to the next main process.

    One socket rather than one per process (SO_REUSEPORT): connections waiting in the accept
    queue of a socket that closes are reset, while a socket shared by descriptor lives as
    long as any process holds it, so a worker's or a whole server's exit loses none. And
    without SO_REUSEPORT a second server started on the same port fails, as Java's does,
    instead of silently taking half of the connections.
    """
    family = socket.AF_INET6 if ":" in interface else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as Twisted's listenTCP
        sock.bind((interface, port))
        sock.listen(backlog)
        sock.setblocking(False)
    except Exception:
        sock.close()
        raise
    return sock


def socket_address(sock):
    """A listening socket's address as Twisted's IPv4Address/IPv6Address (an IListeningPort's getHost)."""
    host, port = sock.getsockname()[:2]
    kind = IPv6Address if sock.family == socket.AF_INET6 else IPv4Address
    return kind("TCP", host, port)


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
