"""The served list's rule, with no clock and no socket: times are plain numbers (seconds)."""

from namesrv.addressing.liveness import REMOVED, RESTORED, AddressLiveness

A, B, C = "127.0.0.1:9876", "127.0.0.2:9876", "127.0.0.3:9876"


def book(now=0.0):
    return AddressLiveness((A, B, C), now, down_after=5.0, up_after=2)


def test_every_listed_server_is_served_at_start_in_the_configured_order():
    b = book()
    assert b.served == (A, B, C) and b.text == "%s;%s;%s" % (A, B, C) and not b.fallback


def test_a_silent_server_leaves_only_once_its_last_answer_is_down_after_old():
    b = book()
    b.answered(B, 1.0)
    assert b.failed(B, 3.0, "refused") is None          # one lost probe: still listed
    assert b.failed(B, 5.9, "refused") is None
    assert b.failed(B, 6.0, "refused") == REMOVED
    assert b.served == (A, C) and b.text == A + ";" + C
    assert b.states[B].last_failure == "refused" and b.silent_for(B, 7.0) == 6.0
    assert b.failed(B, 8.0, "refused") is None           # removed once


def test_a_server_that_never_answered_leaves_down_after_the_start():
    b = book(now=100.0)
    assert b.failed(C, 104.0, "timeout") is None
    assert b.failed(C, 105.0, "timeout") == REMOVED


def test_it_comes_back_after_up_after_answers_in_a_row():
    b = book()
    b.failed(A, 5.0, "x")
    b.answered(A, 6.0)
    assert b.failed(A, 7.0, "x") is None and A not in b.served      # the run is broken
    assert b.answered(A, 8.0) is None and A not in b.served
    assert b.answered(A, 10.0) == RESTORED
    assert b.served == (A, B, C)


def test_the_list_is_never_empty_because_of_probing():
    b = book()
    for address in (A, B, C):
        b.failed(address, 5.0, "x")
    assert b.fallback and b.served == (A, B, C)
    b.answered(C, 6.0)
    assert b.answered(C, 7.0) == RESTORED
    assert not b.fallback and b.served == (C,)


def test_a_new_list_keeps_what_the_probes_said_of_servers_still_listed():
    b = book()
    b.failed(B, 5.0, "x")
    b.replace((B, "127.0.0.4:9876"), 6.0)
    assert b.served == ("127.0.0.4:9876",)
    assert b.answered(A, 7.0) is None and b.failed(A, 70.0, "x") is None   # no longer listed: ignored
    b.restart(8.0)
    assert b.served == (B, "127.0.0.4:9876")
