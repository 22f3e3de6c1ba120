"""The status page's sorted topic names: sorted again only when the set of topics changes."""

from twisted.internet.task import Clock

from namesrv.status.views import SortedTopics
from tests.routes.helpers import new_routes, register


class CountingSort(SortedTopics):
    sorts = 0

    def names(self):
        before = self._key
        names = SortedTopics.names(self)
        if self._key != before:
            self.sorts += 1
        return names


def test_the_names_are_sorted_again_only_when_a_topic_comes_or_goes():
    clock = Clock()
    routes = new_routes(clock)
    register(routes, "B", "A", counter=1)
    topics = CountingSort(routes, clock, min_interval=2.0)
    assert topics.names() == ["A", "B", "baseTopic"] and topics.sorts == 1
    for counter in range(2, 6):    # other brokers with the same topics come and go, the first one beats
        clock.advance(3)
        register(routes, "B", "A", counter=counter)
        register(routes, "A", "B", name="broker-%d" % counter, addr="127.0.0.1:%d" % (20000 + counter))
        routes.unregister_broker("DefaultCluster", "127.0.0.1:%d" % (20000 + counter), "broker-%d" % counter, 0)
        assert topics.names() == ["A", "B", "baseTopic"]
    assert topics.sorts == 1
    clock.advance(3)
    register(routes, "B", "A", "C", counter=7)
    assert topics.names() == ["A", "B", "C", "baseTopic"] and topics.sorts == 2
    clock.advance(3)
    routes.delete_topic("C")
    assert topics.names() == ["A", "B", "baseTopic"] and topics.sorts == 3
