"""Hand-offs let go of what they carried (readworkers/channel/unix.py, worker/handoff.py).

The connector and the client transport of a UNIX connection refer to each other; the worker freezes
the collector's objects after each publication, so whatever such a cycle still held stayed for good:
every handed-over broker's registration bytes (215 MiB in a read worker at 200,000 topics)."""

import os

from twisted.python.failure import Failure

from namesrv.readworkers.channel.unix import _OneProtocol
from namesrv.readworkers.worker.handoff import HandoffSender
from tests.fakes import FakeUnixTransport


def test_the_factory_lets_go_of_its_protocol_when_the_connection_ends():
    proto, failures = object(), []
    factory = _OneProtocol(proto, failures.append)
    assert factory.buildProtocol(None) is proto
    factory.clientConnectionLost(None, Failure(ConnectionError("done")))
    assert factory.proto is None and factory.on_failure is None
    assert failures == []


def test_the_factory_reports_a_failure_once_and_lets_go():
    failures = []
    factory = _OneProtocol(object(), failures.append)
    factory.clientConnectionFailed(None, Failure(ConnectionRefusedError()))
    factory.clientConnectionFailed(None, Failure(ConnectionRefusedError()))
    assert len(failures) == 1 and factory.proto is None


def test_the_sender_keeps_no_copy_of_the_bytes_it_handed_over():
    read_end, write_end = os.pipe()
    os.close(read_end)
    sender = HandoffSender(write_end, "127.0.0.1:5555", b"\x00" * 200000)
    transport = FakeUnixTransport()
    sender.makeConnection(transport)
    assert transport.descriptors == [write_end] and transport.lost
    assert transport.written[0].startswith(b"HANDOFF 127.0.0.1:5555") and len(transport.written[1]) == 200000
    assert sender.unread == b""
    sender.connectionLost(None)
    assert sender.finished and sender.descriptor is None


def test_a_sender_that_could_not_connect_drops_its_bytes_and_descriptor():
    read_end, write_end = os.pipe()
    os.close(read_end)
    sender = HandoffSender(write_end, "127.0.0.1:5555", b"x" * 1000)
    sender.connect_failed(Failure(ConnectionRefusedError()))
    assert sender.unread == b"" and sender.finished and sender.descriptor is None
