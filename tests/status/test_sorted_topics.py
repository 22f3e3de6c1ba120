"""The status page's sorted topic names: sorted again only when the set of topics changes."""

import re

from twisted.internet.task import Clock

from namesrv.status import views
from namesrv.status.views import SortedTopics
from tests.fakes import FakeConnection, run_turns, turn_scheduler
from tests.routes.helpers import new_routes, register
from tests.status import pages


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
    from tests.status.pages import get, make, register
    from tests.fakes import FakeConnection as Conn
    monkeypatch.setattr(views, "SLICED_SEARCH_FROM", 10)
    monkeypatch.setattr(views, "SEARCH_SLICE", 7)
    svc = make(tmp_path)
    register(svc, Conn(), "C1", "broker-a", "127.0.0.1:10911", 0, ["T%02d" % i for i in range(30)])
    text = get(svc, "/?t=T1", advance=svc.wall)[2]
    assert "10 topics match" in text and '<a href="?t=T19">T19</a>' in text and "T20" not in text


def test_the_page_lists_topics_in_natural_order(tmp_path):
    """Topic0, Topic1, Topic2, ..., Topic10, Topic100: numbers by their value, as a reader counts (the page sorted
    them as text: Topic0, Topic1, Topic10, Topic100, Topic2)."""
    svc = pages.make(tmp_path)
    names = ["Topic100", "Topic2", "Topic10", "Topic0", "Topic1", "Topic9", "TopicA", "Topic1-b10", "Topic1-b9",
             "Retry7", "%RETRY%g2", "%RETRY%g10"]
    pages.register(svc, FakeConnection(), "C1", "broker-a", "127.0.0.1:10911", 0, names)
    text = pages.get(svc, "/fragment/topics")[2]
    shown = [n for n in re.findall(r'<a href="\?t=[^"]*">([^<]+)</a>', text) if n in names]
    assert shown == ["%RETRY%g2", "%RETRY%g10", "Retry7", "Topic0", "Topic1", "Topic1-b9", "Topic1-b10", "Topic2",
                     "Topic9", "Topic10", "Topic100", "TopicA"]


def test_many_new_names_get_their_order_a_slice_per_turn_and_the_list_is_shown_meanwhile(monkeypatch):
    monkeypatch.setattr(views, "KEYS_INLINE", 10)
    monkeypatch.setattr(views, "SEARCH_SLICE", 20)
    clock = Clock()
    routes = new_routes(clock)
    register(routes, *["T%d" % i for i in range(55)], base_topic=False)
    scheduler = turn_scheduler(clock, budget=0.0)
    topics = SortedTopics(routes, clock, scheduler=scheduler)
    assert topics.names() == sorted("T%d" % i for i in range(55))   # plain order first: T0, T1, T10, ...
    run_turns(clock)
    assert scheduler.turns >= 3                                         # three slices of keys, each its own turn
    assert topics.names() == ["T%d" % i for i in range(55)]
    clock.advance(3)
    register(routes, "T55", "T7", base_topic=False, counter=2, name="broker-b", addr="127.0.0.1:10921")
    assert topics.names()[-3:] == ["T53", "T54", "T55"]                 # a few new ones: sorted in the turn
