"""The change notifications alone: once per operation, trackers, and followers kept across resets."""

from namesrv.routes.changes import RouteChanges
from tests.routes.helpers import new_routes, register, topic


class Tracker(set):
    full = False


def test_an_operation_notifies_once_when_it_ends_and_only_if_something_changed():
    changes, heard = RouteChanges(), []
    changes.add_listener(lambda: heard.append(changes.generation))
    changes.begin()
    changes.changed()
    changes.begin()          # nested: still one notification, at the outermost end
    changes.changed()
    changes.end()
    assert heard == []
    changes.end()
    assert heard == [1]
    changes.begin()
    changes.end()            # nothing changed inside
    changes.changed()        # outside any operation: at once
    assert heard == [1, 2]


def test_trackers_collect_topics_and_a_reset_marks_everything():
    changes = RouteChanges()
    tracker = changes.track(Tracker())
    changes.queue_datas_changed(["A", "B"])
    assert tracker == {"A", "B"} and not tracker.full and changes.generation == 1
    changes.everything_changed()
    assert tracker.full and changes.generation == 2


def test_followers_of_a_manager_survive_a_snapshot_style_replacement():
    routes, other = new_routes(), new_routes()
    heard = []
    routes.add_change_listener(lambda: heard.append(1))
    tracker = routes.track_topic_changes(Tracker())
    register(other, topic("T1"), topic("T2"))
    routes.replace_tables(other)
    assert heard and tracker.full and sorted(routes.topic_queue_table) == ["T1", "T2", "baseTopic"]
    heard.clear()
    register(routes, topic("T3"), counter=2)
    assert heard == [1] and "T3" in tracker
    routes.check_invariants()


def test_the_body_cache_forgets_only_what_it_is_told():
    from namesrv.routes.bodycache import MAX_VARIANTS_PER_TOPIC, RouteBodyCache
    cache = RouteBodyCache()
    cache.remember_route("A", (True, False, None), b"a1")
    cache.remember_route("B", (True, False, None), b"b1")
    cache.topic_list, cache.cluster_info = b"list", b"info"
    cache.forget_routes(["A", "Z"])
    assert cache.route("A", (True, False, None)) is None and cache.route("B", (True, False, None)) == b"b1"
    cache.brokers_changed()
    assert cache.cluster_info is None and cache.topic_list == b"list"
    cache.topic_set_changed()
    assert cache.topic_list is None
    for n in range(MAX_VARIANTS_PER_TOPIC + 1):          # a topic asked in ever new shapes stays bounded
        cache.remember_route("B", (False, bool(n % 2), "conf%d" % n), b"x")
    assert len(cache.routes["B"]) <= MAX_VARIANTS_PER_TOPIC


def test_whole_routes_are_kept_within_their_byte_budget():
    from namesrv.routes.bodycache import ROUTE_OVERHEAD, RouteBodyCache
    cache = RouteBodyCache(max_bytes=10 * (ROUTE_OVERHEAD + 100))
    for n in range(25):
        cache.remember_route("T%d" % n, (True, False, None), b"x" * 100)
        assert cache.route_bytes <= cache.max_bytes
    assert "T24" in cache.routes and "T0" not in cache.routes          # the oldest went first
    assert cache.route_bytes == sum(ROUTE_OVERHEAD + 100 for _ in cache.routes)
    cache.forget_routes(list(cache.routes))
    assert cache.route_bytes == 0
    cache.remember_route("A", (True, False, None), b"y" * 100)
    cache.set_max_bytes(10)
    assert cache.routes == {} and cache.route_bytes == 0


def test_untracking_one_tracker_leaves_an_equal_one_followed():
    changes = RouteChanges()
    publisher, snapshot = changes.track(Tracker()), changes.track(Tracker())   # both empty: equal sets
    changes.untrack(snapshot)
    changes.queue_datas_changed(["A"])
    assert publisher == {"A"} and snapshot == set()
