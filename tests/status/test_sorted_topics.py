"""The status page's sorted topic names: sorted again only when the set of topics changes."""

from twisted.internet.task import Clock

from namesrv.status.views import SortedTopics
from tests.fakes import run_turns, turn_scheduler
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


def test_a_search_of_a_big_table_runs_a_slice_per_turn():
    from namesrv.status import views
    names = ["Topic-%07d" % i for i in range(3 * views.SEARCH_SLICE + 5)]
    clock = Clock()
    scheduler = turn_scheduler(clock, budget=0.0)
    found = []
    views.matching_names(names, "-000001", scheduler).addCallback(found.append)
    assert found == []                             # nothing scanned in the asking turn
    run_turns(clock)
    assert found == [["Topic-%07d" % i for i in range(10, 20)]]
    assert scheduler.turns == 5                    # four slices, each in a turn of its own, then its end


def test_the_page_answers_a_sliced_search(tmp_path, monkeypatch):
    from namesrv.status import views
    from tests.status.test_page import Conn, get, make, register
    monkeypatch.setattr(views, "SLICED_SEARCH_FROM", 10)
    monkeypatch.setattr(views, "SEARCH_SLICE", 7)
    svc = make(tmp_path)
    register(svc, Conn(), "C1", "broker-a", "127.0.0.1:10911", 0, ["T%02d" % i for i in range(30)])
    text = get(svc, "/?t=T1", advance=svc.wall)[2]
    assert "10 topics match" in text and '<a href="?t=T19">T19</a>' in text and "T20" not in text
