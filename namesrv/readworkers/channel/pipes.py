"""The feed pipe (main process -> a worker's stdin) sized for a publication, read in one go.

A registration's publication is one message (feed.publication), often larger than a pipe of Linux's
default 64 KiB: the main process then writes it over several reactor turns (the rest waits for the pipe
to drain, behind whatever the next turn runs, a large registration included), and Twisted's process
reader takes it 8 KB per reactor turn (``fdesc.readFromFD``): a score of turns of a worker busy with
reads. Meanwhile the worker's replica is stale and its reads wait or go to the main process. So the pipe
holds 1 MiB (``F_SETPIPE_SZ``, up to ``/proc/sys/fs/pipe-max-size``) and a worker reads up to 1 MiB of it
at a time (figures: bench/results/design-figures.md#feed-pipe).
"""

import errno
import fcntl
import os

from twisted.internet import main

#: the pipe's size and a worker's read size (Linux allows 1 MiB to anyone by default)
FEED_PIPE_BYTES = 1 << 20


def enlarge(fd, size=FEED_PIPE_BYTES):
    """Make the pipe of ``fd`` hold ``size`` bytes where the system allows it; the size it has."""
    setter = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setter is None:
        return None
    try:
        return fcntl.fcntl(fd, setter, size)
    except OSError:   # above pipe-max-size for an unprivileged process, or not a pipe
        return None


def read_in_large_chunks(reader, size=FEED_PIPE_BYTES):
    """Make a Twisted ProcessReader (a StandardIO's ``_reader``) read up to ``size`` bytes per turn."""
    def do_read():
        try:
            data = os.read(reader.fd, size)
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EINTR):
                return None
            return main.CONNECTION_LOST
        if not data:
            return main.CONNECTION_DONE
        reader.dataReceived(data)
        return None
    reader.doRead = do_read
    return reader


def write_now(transport, data, child_fd=0):
    """Write ``data`` to a child process's pipe ``child_fd`` now if nothing waits before it (the rest, and
    any error, through ``transport.writeToChild`` as Twisted does): Twisted's writer only buffers, and sends
    on the next reactor turn, after whatever that turn runs first (a registration of several ms). A pipe that
    broke (a worker killed, whose end is not reported yet) takes nothing: Twisted's writeToChild would raise
    KeyError (seen by tools.stopstress, a publication right after a kill -9)."""
    pipes = getattr(transport, "pipes", None)
    writer = pipes.get(child_fd) if pipes is not None else None
    if pipes is not None and writer is None:
        return   # that pipe broke and is gone (the child died; its processEnded follows): nobody reads this
    if writer is not None and not writer.dataBuffer and not getattr(writer, "_tempDataBuffer", True) \
            and not writer.disconnecting and writer.connected:
        try:
            written = os.write(writer.fd, data)
        except OSError:
            written = 0   # EAGAIN, or an error the writer's own write will report
        if written == len(data):
            return
        data = data[written:]
    transport.writeToChild(child_fd, data)
