"""The Wing–Gong checker on histories whose answer is known, bad ones first."""

import pytest

from tools.faultlab.linearizable import INDETERMINATE, BrokerIdTable, CasRegister, GrowOnlySet, Op, check


def op(kind, arg, result, call, ret=INDETERMINATE, process=1):
    return Op(process, kind, arg, result, call, ret)


def test_a_stale_read_after_a_write_returned_is_not_linearizable():
    history = [op("add", 1, "ok", 0, 1), op("read", None, frozenset(), 2, 3)]
    assert not check(history, GrowOnlySet())


def test_a_read_overlapping_the_write_may_see_either():
    for seen in (frozenset(), frozenset({1})):
        assert check([op("add", 1, "ok", 0, 2), op("read", None, seen, 1, 3, process=2)], GrowOnlySet())


def test_reads_that_go_back_in_time_are_caught():
    history = [op("add", 1, "ok", 0, 5), op("read", None, frozenset({1}), 1, 2, process=2),
               op("read", None, frozenset(), 3, 4, process=3)]
    assert not check(history, GrowOnlySet())


def test_an_indeterminate_write_may_or_may_not_have_happened():
    assert check([op("add", 1, None, 0), op("read", None, frozenset(), 1, 2)], GrowOnlySet())
    assert check([op("add", 1, None, 0), op("read", None, frozenset({1}), 1, 2)], GrowOnlySet())
    # but never before it was called
    assert not check([op("read", None, frozenset({1}), 0, 1), op("add", 1, None, 2)], GrowOnlySet())


def test_broker_ids_two_clients_cannot_both_claim_the_same_id():
    history = [op("claim", 1, True, 0, 1), op("claim", 2, True, 2, 3),
               op("claim", 2, True, 4, 5, process=2)]
    assert not check(history, BrokerIdTable())


def test_broker_ids_the_first_claim_must_be_one_and_reads_count_claims():
    assert not check([op("claim", 3, True, 0, 1)], BrokerIdTable())
    good = [op("read", None, 1, 0, 1), op("claim", 1, True, 2, 3), op("claim", 4, True, 4, 5),
            op("read", None, 3, 6, 7), op("claim", 4, False, 8, 9)]
    assert check(good, BrokerIdTable())
    assert not check(good[:3] + [op("read", None, 2, 6, 7)], BrokerIdTable())


def test_concurrent_claims_order_themselves():
    history = [op("claim", 1, True, 0, 10, process=1), op("claim", 1, False, 1, 9, process=2),
               op("claim", 2, True, 2, 8, process=3)]
    assert check(history, BrokerIdTable())


def test_cas_register():
    assert check([op("cas", 1, True, 0, 1), op("read", None, 2, 2, 3)], CasRegister())
    assert not check([op("cas", 1, True, 0, 1), op("cas", 1, True, 2, 3)], CasRegister())


@pytest.mark.parametrize("n", [40, 200])
def test_long_sequential_histories_are_checked_quickly(n):
    history = [op("claim", i + 1, True, 2 * i, 2 * i + 1) for i in range(n)]
    verdict = check(history, BrokerIdTable())
    assert verdict and verdict.explored <= 2 * n + 1
