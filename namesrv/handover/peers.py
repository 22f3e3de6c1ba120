"""The process at the other end of the control socket, and whether it still runs.

A takeover has a survivor whichever side dies mid-way: the old process serves again when
the new one dies before it has taken everything (also just after ``ready``: the old one
then still holds the listening socket), and the new process starts on its own when the old
one dies before giving it the state. A closed conversation alone does not say which it
was (the new process also closes once done), so the survivor asks the kernel who was at
the other end (SO_PEERCRED) and looks whether that process still runs.
"""

import socket
import struct

from twisted.internet import defer, task

from namesrv.readworkers.channel.scratch import process_start

_CREDENTIALS = struct.Struct("3i")   # struct ucred: pid, uid, gid
#: how long a peer whose conversation closed may take to be gone, if it is dying
EXIT_WAIT = 1.0
STEP = 0.05


def peer_pid(transport):
    """The PID of the process at the other end of a UNIX ``transport``, or None."""
    handle = getattr(transport, "socket", None)
    option = getattr(socket, "SO_PEERCRED", None)
    if handle is None or option is None:
        return None
    try:
        pid, _, _ = _CREDENTIALS.unpack(handle.getsockopt(socket.SOL_SOCKET, option, _CREDENTIALS.size))
    except (OSError, struct.error):
        return None
    return pid or None


def running(pid):
    """Does ``pid`` still run (a zombie does not)?"""
    return pid is not None and process_start(pid) is not None


def gone_within(clock, pid, timeout=EXIT_WAIT, is_running=running):
    """A Deferred firing True once ``pid`` no longer runs, False if it still does after ``timeout``
    (a process killed while its sockets close is still exiting for a moment)."""
    if pid is None:
        return defer.succeed(False)
    deadline = clock.seconds() + timeout

    def look():
        if not is_running(pid):
            return True
        if clock.seconds() >= deadline:
            return False
        return task.deferLater(clock, STEP, look)
    return defer.maybeDeferred(look)


def bindable(interface, port):
    """Could a new listening socket bind ``interface:port`` now?"""
    family = socket.AF_INET6 if ":" in interface else socket.AF_INET
    probe = socket.socket(family, socket.SOCK_STREAM)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((interface, port))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def bindable_within(clock, interface, port, timeout):
    """A Deferred firing once ``interface:port`` can be bound (the dead old process's workers,
    which held its socket, are gone), or after ``timeout`` (the start then fails as usual)."""
    deadline = clock.seconds() + timeout

    def look():
        if bindable(interface, port) or clock.seconds() >= deadline:
            return None
        return task.deferLater(clock, STEP, look)
    return defer.maybeDeferred(look)
