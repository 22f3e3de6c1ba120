"""The fleet of ``bench.bigfleet``: each broker with its own topics, its own body, its own connection.

``FleetLayout`` says which topics a broker hosts (the layout of issue 21: every topic on
``brokers_per_topic`` brokers, neighbouring brokers sharing most of theirs); ``LayoutFleet`` runs
the brokers in one child process with ``bench.fleet_brokers``' selector loop, 4.9 style (the full
REGISTER_BROKER every cycle), and can drop every connection at once.
"""

import multiprocessing
import time

from bench.lib.brokers import register_body, register_request
from bench.lib.fleet_brokers import BrokerFleet, _Fleet, _split, serve_commands

CLUSTER = "FleetCluster"


class FleetLayout:
    """``brokers`` brokers over ``topics`` topics, each topic on ``brokers_per_topic`` of them."""

    def __init__(self, brokers, topics, brokers_per_topic, topic_prefix="Fleet"):
        if brokers < 1 or topics < brokers or not 1 <= brokers_per_topic <= brokers:
            raise ValueError("need 1 <= brokers <= topics and 1 <= brokers per topic <= brokers")
        self.brokers, self.topics, self.brokers_per_topic = brokers, topics, brokers_per_topic
        self.step = topics // brokers
        self.per_broker = topics * brokers_per_topic // brokers
        self.topic_prefix = topic_prefix

    def topic_name(self, index):
        return "%s%06d" % (self.topic_prefix, index)

    def broker_topics(self, broker):
        return [self.topic_name((broker * self.step + j) % self.topics) for j in range(self.per_broker)]

    def all_topics(self):
        return [self.topic_name(i) for i in range(self.topics)]

    @staticmethod
    def broker_name(broker):
        return "fleet-b%05d" % broker

    @staticmethod
    def broker_addr(broker):
        """A distinct loopback address per broker (data only: nobody connects to it)."""
        return "127.%d.%d.%d:10911" % (1 + (broker >> 16) % 250, (broker >> 8) & 255, broker & 255)


class _LayoutFleetState(_Fleet):
    def __init__(self, port, layout, host):
        _Fleet.__init__(self, port, "4.9", layout.per_broker, 0)
        self.layout, self.host = layout, host
        self.prepared = {}

    def prepare(self, count):
        """Build the frames of brokers 0..count-1 now (8 ms per 600 KB body), so that ``resize`` times the
        server only; returns the seconds it took."""
        started = time.perf_counter()
        for i in range(count):
            if i not in self.prepared:
                self.prepared[i] = self._build(i)
        return time.perf_counter() - started

    def _frames(self, i):
        frames = self.prepared.pop(i, None)
        return frames if frames is not None else self._build(i)

    def _build(self, i):
        layout = self.layout
        body = register_body(layout.broker_topics(i), False)
        register = _split(register_request(layout.broker_name(i), layout.broker_addr(i), body, False, 0, CLUSTER),
                          body)
        return {"register": [register], "beat": [register]}

    def drop(self):
        """Close every broker's connection at once (a switch reboots)."""
        for broker in self.brokers:
            self.selector.unregister(broker.sock)
            broker.sock.close()
        count, self.brokers = len(self.brokers), []
        return count


def _run(pipe, port, layout, host):
    serve_commands(pipe, _LayoutFleetState(port, layout, host))


class LayoutFleet(BrokerFleet):
    """``with LayoutFleet(port, layout) as fleet: fleet.resize(layout.brokers); fleet.prime(); ...``"""

    def __init__(self, port, layout, host="127.0.0.1"):
        self.style, self.topics, self.size = "4.9", layout.per_broker, 0
        ctx = multiprocessing.get_context("fork")
        self._pipe, child = ctx.Pipe()
        self._process = ctx.Process(target=_run, args=(child, port, layout, host), daemon=True)

    def drop(self):
        return self._call("drop")

    def prepare(self, count):
        return self._call("prepare", count)
