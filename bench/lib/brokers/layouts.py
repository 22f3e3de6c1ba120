"""Who the fake brokers of a fleet are: each one's name, id, address and cluster, and the topics it serves.

A layout numbers its brokers from 0 and says, for broker ``i``, its ``Broker`` identity and its topic
group: brokers of one group serve the same topics, so a fleet builds their body once and shares it.

- ``BandLayout`` (bench.scenarios.fleet): master and slave pairs under one broker name, four pairs a
  cluster ("band"), every broker of a band serving the band's topics: a topic on four broker groups, as
  when a topic is created on a cluster.
- ``SpreadLayout`` (bench.scenarios.bigfleet, cold_registration): one cluster, every topic on
  ``brokers_per_topic`` brokers, neighbouring brokers sharing most of theirs.
- ``OwnTopicsLayout`` (bench.scenarios.mixed, heartbeat_stall): every broker with topics of its own.
"""

from typing import NamedTuple

from bench.lib.brokers.bodies import register_body, topic_names
from bench.lib.brokers.frames import CLUSTER, register_request


class Broker(NamedTuple):
    name: str
    broker_id: int
    addr: str
    cluster: str


def broker_addr(index):
    """A distinct fake address per broker index (live entries are keyed by cluster and address)."""
    return "10.%d.%d.%d:10911" % ((index >> 16) & 255, (index >> 8) & 255, index & 255)


class Layout:
    """What every layout offers on top of its own ``broker(i)`` (a ``Broker``), ``topic_group(i)`` and
    ``group_topics(group)`` (the topic names of a group)."""

    def topics_of(self, i):
        return self.group_topics(self.topic_group(i))

    def register_request(self, i, compressed=False):
        """Broker ``i``'s REGISTER_BROKER, its body built now."""
        broker = self.broker(i)
        body = register_body(self.topics_of(i), compressed)
        return register_request(broker.name, broker.addr, body, compressed, broker.broker_id, broker.cluster)


class BandLayout(Layout):
    """Bands of ``GROUPS_PER_BAND`` groups of a master (id 0) and a slave (id 1), ``per_broker`` topics a band."""

    GROUPS_PER_BAND = 4
    BROKERS_PER_GROUP = 2
    BROKERS_PER_BAND = GROUPS_PER_BAND * BROKERS_PER_GROUP

    def __init__(self, per_broker, first_index=100_000):
        self.per_broker, self.first_index = per_broker, first_index

    def broker(self, i):
        band, in_band = divmod(i, self.BROKERS_PER_BAND)
        group = self.first_index // self.BROKERS_PER_GROUP + i // self.BROKERS_PER_GROUP
        return Broker("fleet-g%06d" % group, in_band % self.BROKERS_PER_GROUP, broker_addr(self.first_index + i),
                      band_cluster(band))

    def topic_group(self, i):
        return i // self.BROKERS_PER_BAND

    def group_topics(self, band):
        return band_topics(band, self.per_broker)

    def sample_topics(self, brokers, count):
        """Up to ``count`` topic names spread over the bands ``brokers`` brokers serve."""
        bands = max(1, -(-brokers // self.BROKERS_PER_BAND))
        per_band = max(1, count // bands)
        step = max(1, self.per_broker // per_band)
        names = []
        for band in range(bands):
            names.extend(self.group_topics(band)[::step][:per_band])
        return names[:max(count, bands)]


def band_cluster(band):
    return "FleetCluster-%04d" % band


def band_topics(band, topics):
    return topic_names("FleetB%04d" % band, topics)


class SpreadLayout(Layout):
    """``brokers`` brokers over ``topics`` topics, each topic on ``brokers_per_topic`` of them: broker b
    serves ``topics × brokers_per_topic / brokers`` topics, from topic ``b × topics / brokers`` on."""

    CLUSTER = "FleetCluster"

    def __init__(self, brokers, topics, brokers_per_topic, topic_prefix="Fleet"):
        if brokers < 1 or topics < brokers or not 1 <= brokers_per_topic <= brokers:
            raise ValueError("need 1 <= brokers <= topics and 1 <= brokers per topic <= brokers")
        self.brokers, self.topics, self.brokers_per_topic = brokers, topics, brokers_per_topic
        self.step = topics // brokers
        self.per_broker = topics * brokers_per_topic // brokers
        self.topic_prefix = topic_prefix

    def broker(self, i):
        return Broker("fleet-b%05d" % i, 0, self.broker_addr(i), self.CLUSTER)

    @staticmethod
    def broker_addr(i):
        """A distinct loopback address per broker (data only: nobody connects to it)."""
        return "127.%d.%d.%d:10911" % (1 + (i >> 16) % 250, (i >> 8) & 255, i & 255)

    def topic_group(self, i):
        return i

    def group_topics(self, i):
        return [self.topic_name((i * self.step + j) % self.topics) for j in range(self.per_broker)]

    def topic_name(self, index):
        return "%s%06d" % (self.topic_prefix, index)

    def all_topics(self):
        return [self.topic_name(i) for i in range(self.topics)]


class OwnTopicsLayout(Layout):
    """Broker i is ``name % i`` at ``broker_addr(first_index + i)``, serving ``per_broker`` topics named
    after ``topic_prefix % i``."""

    def __init__(self, per_broker, name="bench-hb-broker-%03d", topic_prefix="BenchHbTopic-%03d", first_index=1000,
                 cluster=CLUSTER):
        self.per_broker, self.name, self.topic_prefix = per_broker, name, topic_prefix
        self.first_index, self.cluster = first_index, cluster

    def broker(self, i):
        return Broker(self.name % i, 0, broker_addr(self.first_index + i), self.cluster)

    def topic_group(self, i):
        return i

    def group_topics(self, i):
        return topic_names(self.topic_prefix % i, self.per_broker)
