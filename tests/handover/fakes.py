"""A transport that records descriptors passed with the stream, and a fake old server."""

from twisted.internet.interfaces import IUNIXTransport
from twisted.internet.testing import StringTransport
from zope.interface import implementer

from namesrv.storage.instance import InstanceIdentity


@implementer(IUNIXTransport)
class DescriptorTransport(StringTransport):
    """StringTransport plus ``sendFileDescriptor``: ``descriptors`` holds (byte offset, fd)."""

    def __init__(self):
        StringTransport.__init__(self)
        self.descriptors = []

    def sendFileDescriptor(self, descriptor):
        self.descriptors.append((len(self.value()), descriptor))


class FakeServer:
    """What HandingSession needs from the old process, recorded."""

    def __init__(self, instance="id-1", listen="127.0.0.1:9876"):
        self.identity = InstanceIdentity(instance, listen)
        self.busy = False
        self.calls = []
        self.is_settled = False
        self.sockets = [(41, "127.0.0.1:5000", b"\x00\x00"), (42, "127.0.0.1:5001", b"")]

    def begin(self):
        self.busy = True
        self.calls.append("begin")

    def settled(self):
        return self.is_settled

    def listen_fd(self):
        return 40

    def tables(self):
        self.calls.append("tables")
        return b"ROUTES"

    def precopy(self):
        self.busy = True
        self.calls.append("precopy")
        return b"FIRST COPY"

    def changes(self):
        self.calls.append("changes")
        return {"delta": b"DELTA", "registrations": [["C", "127.0.0.1:10911", b"F" * 32, 3, {"counter": 1}]]}

    def abandon(self, why):
        self.busy = False
        self.calls.append("abandon")

    def detach_clients(self):
        self.calls.append("detach_clients")
        return list(self.sockets), 1

    def detach_brokers(self):
        self.calls.append("detach_brokers")
        return [], 0

    def release(self, sockets):
        self.calls.append(("release", [s[0] for s in sockets]))

    def resume(self, why):
        self.busy = False
        self.calls.append("resume")

    def finished(self, moved, closed):
        self.calls.append(("finished", moved, closed))

    def exit(self):
        self.calls.append("exit")
