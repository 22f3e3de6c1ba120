"""Answers go to the socket at once when nothing waits before them.

Twisted's ``transport.write`` only buffers: it asks the reactor to watch the socket for
writing (one ``epoll_ctl``), sends on the next reactor turn (one more ``epoll_wait`` wake-up)
and stops watching (another ``epoll_ctl``). For a name server whose every answer is a few KB
written right after the request was read, that is three system calls and a reactor turn per
read on top of the ``send`` itself, a large share of a read worker's time under load
(bench/results/design-figures.md#write-through). Netty, under the Java server, writes on flush.

So when the transport is a plain TCP connection with nothing buffered, the bytes are sent
here; whatever the kernel does not take (a full socket buffer), or any error, goes to
``transport.write`` as before, which keeps the order (nothing was buffered before it), the
streaming producer's pause/resume and the handling of a lost connection. TLS connections and
any other transport always take ``transport.write``.
"""

from twisted.internet import tcp
from twisted.internet.interfaces import ITransport


#: the attributes this relies on (a Twisted without them always buffers; a test checks they are there)
SUPPORTED = all(hasattr(tcp.Server, name) for name in ("dataBuffer", "TLS", "connected", "disconnecting"))


def write(transport: ITransport, data: bytes) -> None:
    """Send ``data`` on ``transport`` now if it can go straight out, else buffer it as Twisted does."""
    if (SUPPORTED and type(transport) is tcp.Server and not transport.TLS and transport.connected
            and not transport.disconnecting and not transport.dataBuffer and not getattr(transport, "_tempDataBuffer", True)):
        try:
            sent = transport.socket.send(data)
        except OSError:
            sent = 0      # EAGAIN, or an error that transport.write's own send will report
        if sent == len(data):
            return
        data = data[sent:]
    transport.write(data)
