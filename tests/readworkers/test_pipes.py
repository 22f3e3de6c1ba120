"""The feed pipe holds a publication and is read in one go (channel/pipes.py)."""

import os

from namesrv.readworkers.channel import pipes


class Writer:
    def __init__(self, fd):
        self.fd = fd
        self.dataBuffer = b""
        self._tempDataBuffer = []
        self.connected = True
        self.disconnecting = False


class Transport:
    def __init__(self, fd):
        self.pipes = {0: Writer(fd)}
        self.buffered = []

    def writeToChild(self, child_fd, data):
        self.buffered.append((child_fd, data))


def test_the_pipe_holds_a_publication_and_a_write_goes_out_at_once():
    read_fd, write_fd = os.pipe()
    try:
        os.set_blocking(write_fd, False)
        assert pipes.enlarge(write_fd) >= pipes.FEED_PIPE_BYTES
        transport = Transport(write_fd)
        message = b"x" * (300 * 1024)          # more than a default pipe (64 KiB) holds
        pipes.write_now(transport, message)
        assert transport.buffered == []
        transport.pipes[0].dataBuffer = b"waiting"   # something queued before: after it, as Twisted writes
        pipes.write_now(transport, b"next")
        assert transport.buffered == [(0, b"next")]
        received = []

        class Reader:
            fd = read_fd
            dataReceived = received.append
        pipes.read_in_large_chunks(Reader).doRead()
        assert received == [message]          # one read, not one per 8 KB
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_the_end_of_the_pipe_is_its_end():
    read_fd, write_fd = os.pipe()
    os.close(write_fd)

    class Reader:
        fd = read_fd
        dataReceived = None
    try:
        from twisted.internet import main
        assert pipes.read_in_large_chunks(Reader).doRead() is main.CONNECTION_DONE
    finally:
        os.close(read_fd)


def test_a_pipe_already_gone_takes_nothing():
    """A worker killed -9: Twisted drops its stdin pipe before the process's end is reported, and a
    publication then must not raise (writeToChild would: KeyError 0)."""
    transport = Transport(-1)
    del transport.pipes[0]
    transport.writeToChild = lambda child_fd, data: transport.pipes[child_fd]
    pipes.write_now(transport, b"a publication")
