"""Can every port of this server be opened? Asked before twistd daemonizes (namesrv/startup).

Each port is bound once, as the server will bind it (``SO_REUSEADDR``, as Twisted's listenTCP and
the shared remoting socket do), and closed at once. The real listen comes a moment later, so a
port taken in between still fails then; what this catches is the usual case: another server on
the port, an address that is not this host's, a port that needs privileges.
"""

import errno
import socket
from typing import NamedTuple

from namesrv.startup import StartupError


class Listen(NamedTuple):
    """A port the server will open: ``what`` names it (the property), ``change`` says what to change."""

    what: str
    host: str
    port: int
    change: str = ""


def check_ports(ports):
    """Raises StartupError for the first of ``ports`` (Listen) that cannot be opened. Port 0 (any
    free port, or off) is skipped."""
    seen = {}
    for listen in ports:
        if not listen.port:
            continue
        if listen.port in seen:
            raise StartupError("%s and %s are both port %d: give each its own port"
                               % (seen[listen.port], listen.what, listen.port))
        seen[listen.port] = listen.what
        _try_bind(listen.what, listen.host or "0.0.0.0", listen.port, listen.change or listen.what)


def _try_bind(what, host, port, change):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as e:
        raise StartupError("%s %d: cannot make a socket for %s: %s" % (what, port, host, e.strerror or e))
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except socket.gaierror as e:
        raise StartupError("%s %d: %r is not an address (%s): use an address of this host, 127.0.0.1 or 0.0.0.0"
                           % (what, port, host, e.strerror or e))
    except OverflowError:
        raise StartupError("%s %d is not a TCP port: use 1-65535" % (what, port))
    except OSError as e:
        raise StartupError(_explain(what, host, port, change, e))
    finally:
        sock.close()


def _explain(what, host, port, change, error):
    where = "%s %d on %s" % (what, port, host)
    if error.errno == errno.EADDRINUSE:
        return ("%s is already in use (another name server? `ss -ltnp 'sport = :%d'` shows which process): "
                "stop it, or change %s" % (where, port, change))
    if error.errno == errno.EADDRNOTAVAIL:
        return "%s: %s is not an address of this host: use one of its addresses, 127.0.0.1 or 0.0.0.0" % (
            where, host)
    if error.errno == errno.EACCES:
        return "%s needs privileges (a port below 1024): use a port above 1023" % where
    return "%s cannot be opened: %s" % (where, error.strerror or error)
