"""Whole-table topic lists built a slice at a time (namesrv/routes/topiclists.py): the same bytes as
the one-go encoder, refused past the limit, kept only while no topic came or went."""

import random

import pytest
from hypothesis import given, settings, strategies as st

from namesrv.routes import topiclists
from namesrv.routes.bodies import encode
from tests.routes.helpers import new_routes, register

def _steps(gen):
    """(how many times it yielded, its value)."""
    steps = 0
    while True:
        try:
            next(gen)
            steps += 1
        except StopIteration as done:
            return steps, done.value


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12),
                unique=True, max_size=40),
       st.one_of(st.none(), st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=10)))
def test_same_bytes_as_the_one_go_encoder(names, broker_addr):
    assert topiclists.drain(topiclists.topic_list_body(list(names), 1 << 30, broker_addr)) == \
        encode.encode_topic_list(sorted(names), broker_addr)


def test_many_slices_are_merged_in_order(monkeypatch):
    monkeypatch.setattr(topiclists, "SLICE", 7)
    rng = random.Random(5)
    names = ["t%05d-\u00e9%s" % (rng.randrange(100000), "\"\\" * rng.randrange(2)) for _ in range(500)]
    names = list(dict.fromkeys(names))
    steps, body = _steps(topiclists.topic_list_body(list(names), 1 << 30))
    assert body == encode.encode_topic_list(sorted(names))
    assert steps >= 2 * len(names) // 7   # runs sorted, merged and encoded a slice per step


def test_a_list_that_fills_the_limit_exactly_is_sent_and_one_byte_less_refused():
    names = ["Topic%d" % i for i in range(100)]
    body = encode.encode_topic_list(sorted(names))
    assert topiclists.drain(topiclists.topic_list_body(names, len(body))) == body
    with pytest.raises(topiclists.TooLarge) as refused:
        topiclists.drain(topiclists.topic_list_body(names, len(body) - 1))
    assert (refused.value.count, refused.value.limit) == (100, len(body) - 1)
    assert refused.value.size > len(body) - 1


def test_a_list_far_over_the_limit_is_refused_before_any_sorting(monkeypatch):
    def no_sorting(names):
        raise AssertionError("sorted a list that cannot be sent")
    monkeypatch.setattr(topiclists, "sorted_names", no_sorting)
    names = ["bigfleet-topic-%07d" % i for i in range(20000)]
    with pytest.raises(topiclists.TooLarge) as refused:
        topiclists.drain(topiclists.topic_list_body(names, 100000))   # the lower bound alone
    assert (refused.value.count, refused.value.size) == (20000, len(encode.encode_topic_list(names)))


def test_escaped_names_are_measured_exactly():
    names = ['q"' * 10, "\u00e9" * 10]   # 20 + 10 escapes; 10 two-byte characters
    body = encode.encode_topic_list(sorted(names))
    assert topiclists.drain(topiclists.topic_list_body(names, len(body))) == body
    with pytest.raises(topiclists.TooLarge):
        topiclists.drain(topiclists.topic_list_body(names, len(body) - 1))


@pytest.fixture
def routes():
    return new_routes()


def test_the_all_topic_list_is_kept_until_a_topic_comes_or_goes(routes):
    register(routes, "A", "B", base_topic=False)
    body = topiclists.drain(routes.all_topic_list_sliced(1 << 20))
    assert body == b'{"topicList":["A","B"]}'
    assert topiclists.drain(routes.all_topic_list_sliced(1 << 20)) is body
    register(routes, "A", "B", "C", counter=2, base_topic=False)
    assert topiclists.drain(routes.all_topic_list_sliced(1 << 20)) == b'{"topicList":["A","B","C"]}'


def test_a_refusal_is_kept_for_that_limit_only(routes):
    register(routes, "A", "B", base_topic=False)
    with pytest.raises(topiclists.TooLarge):
        topiclists.drain(routes.all_topic_list_sliced(10))
    assert routes.body_cache.topic_list_refused is not None
    with pytest.raises(topiclists.TooLarge):
        next(routes.all_topic_list_sliced(10))   # no build: the kept refusal answers
    assert topiclists.drain(routes.all_topic_list_sliced(1 << 20)) == b'{"topicList":["A","B"]}'
    with pytest.raises(topiclists.TooLarge):   # the kept body is longer than a smaller limit
        next(routes.all_topic_list_sliced(10))


def test_a_list_built_while_a_topic_came_is_sent_but_not_kept(routes, monkeypatch):
    monkeypatch.setattr(topiclists, "SLICE", 2)
    register(routes, "A", "B", "C", "D", "E", base_topic=False)
    gen = routes.all_topic_list_sliced(1 << 20)
    next(gen)
    register(routes, "A", "B", "C", "D", "E", "F", counter=2, base_topic=False)
    assert topiclists.drain(gen) == b'{"topicList":["A","B","C","D","E"]}'   # as of its start
    assert routes.body_cache.topic_list is None
    assert topiclists.drain(routes.all_topic_list_sliced(1 << 20)) == b'{"topicList":["A","B","C","D","E","F"]}'


def test_cluster_and_unit_lists_slice_like_the_synchronous_queries(routes, monkeypatch):
    monkeypatch.setattr(topiclists, "SLICE", 3)
    for i in range(6):
        register(routes, *["T%d" % j for j in range(i, i + 5)], cluster="c%d" % (i % 2), name="b%d" % i,
                 addr="h:%d" % i, base_topic=False)
    for cluster in ("c0", "c1", "nobody"):
        expected = encode.encode_topic_list(routes.topics_by_cluster(cluster))
        assert topiclists.drain(routes.topics_by_cluster_sliced(cluster, 1 << 20)) == expected
    assert topiclists.drain(routes.topics_by_sys_flag_sliced(topiclists.is_unit, 1 << 20)) == \
        encode.encode_topic_list(routes.unit_topics())
