"""A read that finds the replica stale waits a moment for the publication on its way (worker/freshness.py)."""

from twisted.internet import task

from namesrv.protocol.codes import RequestCode
from namesrv.readworkers.worker.freshness import HEDGE, WAIT, WaitForFresh
from tests.fakes import answers_so_far


class Shared:
    """The shared counter: the main process has acknowledged changes up to ``value``."""

    def __init__(self, value):
        self.value = value

    def read(self):
        return self.value


class Replica:
    """Applied up to ``generation``; the counter is ahead of it (stale) until ``apply``."""
    complete = True
    held = False
    in_publication = False

    def __init__(self, registry):
        self.local_codes = frozenset([RequestCode.GET_ROUTEINFO_BY_TOPIC])
        self.shared = Shared(5)
        self.generation = 4
        self.registry = registry
        self.applied_listeners = []

    def fresh(self):
        return self.generation == self.shared.value

    def holds(self, needed):
        return not self.in_publication and needed <= self.generation <= self.shared.value

    def apply(self, generation=None):
        """A publication's message: its last one (``generation``) or a part of a longer one (None)."""
        if generation is not None:
            self.generation = generation
        for listener in self.applied_listeners:
            listener()


class Inner:
    def __init__(self):
        self.dispatched = []

    def dispatch(self, request, connection):
        self.dispatched.append(request)
        return "local answer to %s" % request.opaque


class Request:
    is_oneway = False

    def __init__(self, opaque, code=RequestCode.GET_ROUTEINFO_BY_TOPIC):
        self.opaque, self.code = opaque, code


class Connection:
    closing = False

    def __init__(self):
        self.current_frame = None
        self.forwarded = []
        self.hedged = []
        self.waiting_reads = 0

    def forward(self, frame, expects_answer=True):
        self.forwarded.append((frame, expects_answer))

    def hedge(self, frame, read):
        self.hedged.append((frame, read))


def setup(hedge=WAIT):
    """The dispatcher; ``hedge``: when a waiting read goes to the main process too (WAIT: never)."""
    clock, inner = task.Clock(), Inner()
    replica = Replica(inner)
    return clock, replica, inner, WaitForFresh(inner, replica, clock, hedge=hedge)


def ask(dispatcher, connection, opaque):
    connection.current_frame = b"frame %d" % opaque
    answer = dispatcher.dispatch(Request(opaque), connection)
    connection.current_frame = None   # the protocol moves on to the next frame
    return answers_so_far(answer)


def test_a_fresh_replica_answers_at_once_and_other_codes_go_their_way():
    clock, replica, inner, dispatcher = setup()
    replica.generation = 5
    assert ask(dispatcher, Connection(), 1) == ["local answer to 1"]
    replica.shared.value = 6
    assert dispatcher.dispatch(Request(2, RequestCode.REGISTER_BROKER), Connection()) == "local answer to 2"
    replica.complete = False        # no copy yet: nothing to wait for, forwarded as before
    assert ask(dispatcher, Connection(), 3) == ["local answer to 3"] and not dispatcher.waiting


def test_a_stale_read_waits_for_the_publication_and_is_answered_here():
    clock, replica, inner, dispatcher = setup()
    connection = Connection()
    first, second = ask(dispatcher, connection, 1), ask(dispatcher, connection, 2)
    assert first == second == [] and inner.dispatched == []
    replica.apply()                  # a part of a longer publication: still stale
    assert first == []
    clock.advance(WAIT / 2)
    replica.apply(5)                 # its last message: fresh, both answered here, in order
    assert first == ["local answer to 1"] and second == ["local answer to 2"]
    assert [r.opaque for r in inner.dispatched] == [1, 2] and connection.forwarded == []
    assert not clock.getDelayedCalls()


def test_a_read_still_stale_after_the_wait_is_forwarded_with_its_own_frame():
    clock, replica, inner, dispatcher = setup()
    connection = Connection()
    answers = ask(dispatcher, connection, 7)
    clock.advance(WAIT)
    assert answers == [None] and connection.forwarded == [(b"frame 7", True)] and inner.dispatched == []
    assert dispatcher.forwarded == 1


def test_a_drain_flushes_every_waiting_read_and_a_closed_connection_gets_nothing():
    clock, replica, inner, dispatcher = setup()
    open_, closed = Connection(), Connection()
    waiting, gone = ask(dispatcher, open_, 1), ask(dispatcher, closed, 2)
    closed.closing = True
    dispatcher.flush()
    assert waiting == [None] and open_.forwarded == [(b"frame 1", True)]
    assert gone == [None] and closed.forwarded == []
    assert not dispatcher.waiting and not clock.getDelayedCalls()


def test_a_read_during_a_publication_of_several_parts_is_forwarded_at_once():
    clock, replica, inner, dispatcher = setup()
    replica.in_publication = True    # a mass disconnect's parts, one a reactor turn: stale for longer than a wait
    assert ask(dispatcher, Connection(), 1) == ["local answer to 1"] and not dispatcher.waiting


def test_a_waiting_read_needs_what_was_acknowledged_before_it_came_not_what_came_after():
    # A fleet registering back to back: the main process acknowledges the next registration (the counter
    # moves on) before the worker has applied the previous one's publication.
    clock, replica, inner, dispatcher = setup()
    connection, later = Connection(), Connection()
    first = ask(dispatcher, connection, 1)        # came while the counter read 5
    replica.shared.value = 6                      # the next registration acknowledged
    second = ask(dispatcher, later, 2)            # came while it read 6
    replica.apply(5)                              # stale still (6), but it holds all the first read needs
    assert first == ["local answer to 1"] and second == [] and connection.forwarded == []
    replica.apply(6)
    assert second == ["local answer to 2"] and later.forwarded == []
    assert [r.opaque for r in inner.dispatched] == [1, 2] and not clock.getDelayedCalls()


def test_a_waiting_read_is_not_answered_from_a_half_applied_publication():
    clock, replica, inner, dispatcher = setup()
    connection = Connection()
    answers = ask(dispatcher, connection, 1)
    replica.generation = 5
    replica.in_publication = True                 # the next publication's first part applied, not its end
    replica.shared.value = 6
    replica.apply()
    assert answers == []
    clock.advance(WAIT)
    assert answers == [None] and connection.forwarded == [(b"frame 1", True)] and inner.dispatched == []


def test_a_read_waiting_past_the_hedge_goes_to_the_main_process_too_and_the_replica_may_answer_first():
    clock, replica, inner, dispatcher = setup(HEDGE)
    connection = Connection()
    answers = ask(dispatcher, connection, 1)
    clock.advance(HEDGE / 2)
    assert connection.hedged == [] and answers == []
    clock.advance(HEDGE / 2)
    ((frame, read),) = connection.hedged        # a copy to the main process, the read still waits here
    assert frame == b"frame 1" and answers == [] and connection.waiting_reads == 1 and dispatcher.hedges == 1
    replica.apply(5)                           # the replica first: answered here, the main's answer to be dropped
    assert answers == ["local answer to 1"] and read.answered_here and connection.waiting_reads == 0
    read.answered_by_main()                    # its answer arriving late changes nothing
    assert answers == ["local answer to 1"] and connection.forwarded == [] and not clock.getDelayedCalls()


def test_a_hedged_read_the_main_process_answers_first_stops_waiting_and_is_never_answered_twice():
    clock, replica, inner, dispatcher = setup(HEDGE)
    connection = Connection()
    answers = ask(dispatcher, connection, 1)
    later = ask(dispatcher, connection, 2)
    clock.advance(HEDGE)
    (_, read), (_, second) = connection.hedged
    read.answered_by_main()                    # the main process was free: its answer went to the client
    assert answers == [None] and not read.answered_here and connection.waiting_reads == 1
    replica.apply(5)
    assert answers == [None] and later == ["local answer to 2"] and [r.opaque for r in inner.dispatched] == [2]
    assert second.answered_here and not clock.getDelayedCalls()


def test_a_hedged_read_past_the_wait_is_left_to_the_main_process_not_forwarded_again():
    clock, replica, inner, dispatcher = setup(HEDGE)
    connection = Connection()
    answers = ask(dispatcher, connection, 1)
    clock.advance(WAIT)
    assert len(connection.hedged) == 1 and connection.forwarded == [] and answers == [None]
    assert connection.waiting_reads == 0 and not dispatcher.waiting and not clock.getDelayedCalls()
    dispatcher.flush()
    replica.apply(5)
    assert inner.dispatched == [] and connection.forwarded == []


def test_a_drain_leaves_hedged_reads_to_the_main_process_and_forwards_the_others():
    clock, replica, inner, dispatcher = setup(HEDGE)
    connection = Connection()
    hedged = ask(dispatcher, connection, 1)
    clock.advance(HEDGE)
    fresh_one = ask(dispatcher, connection, 2)
    dispatcher.flush()
    assert hedged == [None] and fresh_one == [None]
    assert connection.forwarded == [(b"frame 2", True)] and [f for f, _ in connection.hedged] == [b"frame 1"]
    assert connection.waiting_reads == 0
