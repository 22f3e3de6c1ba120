"""A quiet publication's parts are held until it ends whole, and nothing is ever reordered or lost (staging.py)."""

from namesrv.readworkers.worker.staging import QuietStaging


def part(n, quiet=True):
    return {"kind": "topics", "quiet": quiet, "n": n}


def end(n, whole=True, topics=None):
    return {"kind": "replica", "whole": whole, "n": n, "topics": topics}


def feed(staging, messages):
    let_through = []
    for message in messages:
        let_through.extend(staging.arrived(message))
    return let_through


def test_quiet_parts_wait_for_their_end_then_go_in_order():
    staging = QuietStaging()
    assert feed(staging, [part(1), part(2)]) == [] and staging.holding == 2
    assert staging.arrived(end(3)) == [part(1), part(2), end(3)]
    assert staging.holding == 0


def test_a_quiet_publication_that_ended_not_whole_waits_for_a_whole_end():
    staging = QuietStaging()
    assert feed(staging, [part(1), part(2), end(3, whole=False), part(4)]) == []
    assert staging.arrived(end(5)) == [part(1), part(2), end(3, whole=False), part(4), end(5)]


def test_anything_not_quiet_lets_what_was_held_go_first():
    staging = QuietStaging()
    feed(staging, [part(1), end(2, whole=False)])
    assert staging.arrived(part(3, quiet=False)) == [part(1), end(2, whole=False), part(3, quiet=False)]
    feed(staging, [part(4), end(5, whole=False)])
    one_message = end(6, topics={"quiet": True})   # a publication of one message: applied in one step
    assert staging.arrived(one_message) == [part(4), end(5, whole=False), one_message]


def test_messages_that_are_not_held_go_at_once():
    staging = QuietStaging()
    assert staging.arrived(part(1, quiet=False)) == [part(1, quiet=False)]
    assert staging.arrived(end(2, whole=False)) == [end(2, whole=False)]   # not after held parts: a mixed end
    assert staging.arrived(end(3)) == [end(3)]


def test_past_its_bound_everything_held_goes():
    staging = QuietStaging(max_held=3)
    assert feed(staging, [part(1), part(2), part(3)]) == []
    assert staging.arrived(part(4)) == [part(1), part(2), part(3), part(4)]
    assert staging.arrived(end(5)) == [end(5)]
