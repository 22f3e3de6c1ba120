"""Live controller groups on 127.0.0.1 in this process's reactor: their properties, a client on a controller
port (in a thread), and bounded waits (a loop on the reactor, never a sleep)."""

from twisted.internet import defer, reactor, task, threads
from twisted.internet.protocol import Protocol

from namesrv.client import BlockingRemotingClient
from namesrv.config import NamesrvConfig
from namesrv.controller.replication.sniffing import MemberSniffingFactory
from namesrv.protocol.command import make_request

DEADLINE = 30.0


@defer.inlineCallbacks
def until(condition, what):
    waited = 0.0
    while not condition():
        if waited > DEADLINE:
            raise AssertionError("not within %s s: %s" % (DEADLINE, what))
        yield task.deferLater(reactor, 0.05, lambda: None)
        waited += 0.05


def controller_config(tmp_path, peers, self_id, **extra):
    config = NamesrvConfig()
    properties = {"controllerDLegerGroup": "g", "controllerDLegerPeers": peers, "controllerDLegerSelfId": self_id,
                  "controllerStorePath": str(tmp_path / ("store-" + self_id))}
    properties.update(extra)
    config.update(properties, announce=False)
    return config


def ask(port, code, ext=None):
    """A RocketMQ client on the controller port (in a thread: the reactor keeps serving)."""
    def call():
        client = BlockingRemotingClient("127.0.0.1", port, timeout=5)
        try:
            return client.call(make_request(code, ext))
        finally:
            client.close()
    return threads.deferToThread(call)


class NoClients:
    """The controller port's remoting side for a member that takes no clients (only members talk)."""

    class config:
        serverChannelMaxIdleTimeSeconds = 120

    connections = {}
    refused = 0

    def connection_limit(self):
        return 0

    def buildProtocol(self, addr):
        return Protocol()

    def doStart(self):
        pass

    def doStop(self):
        pass


def members_only(mesh):
    """A controller port's factory that answers ``mesh``'s members only."""
    return MemberSniffingFactory(NoClients(), mesh, reactor)
