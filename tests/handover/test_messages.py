"""The takeover message format: framing at any cut, version choice, garbage refused."""

import struct

import msgpack
import pytest
from hypothesis import given, strategies as st

from namesrv.handover import messages
from namesrv.handover.messages import HandoverProtocolError, MessageReader, choose_version, encode


def test_a_message_is_a_length_prefixed_msgpack_map_with_its_kind():
    data = encode(messages.HELLO, versions=[1], instance="abc", listen="127.0.0.1:9876", pid=7)
    (length,) = struct.unpack(">I", data[:4])
    assert length == len(data) - 4
    assert msgpack.unpackb(data[4:], raw=False) == {"kind": "hello", "versions": [1], "instance": "abc",
                                                    "listen": "127.0.0.1:9876", "pid": 7}


@given(st.lists(st.binary(max_size=300), min_size=1, max_size=5), st.data())
def test_messages_come_out_whole_whatever_the_cuts(payloads, data):
    stream = b"".join(encode(messages.CONNECTION, peer="127.0.0.1:%d" % i, unread=p) for i, p in enumerate(payloads))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    reader = MessageReader()
    out = []
    for start, end in zip([0] + cuts, cuts + [len(stream)]):
        out.extend(reader.feed(stream[start:end]))
    assert [m["unread"] for m in out] == payloads
    assert [m["peer"] for m in out] == ["127.0.0.1:%d" % i for i in range(len(payloads))]


def test_unknown_keys_are_kept_for_the_reader_to_ignore():
    (message,) = MessageReader().feed(encode(messages.READY, future_field=1))
    assert message["kind"] == "ready" and message["future_field"] == 1


@pytest.mark.parametrize("payload", [b"\xc1", msgpack.packb([1, 2]), msgpack.packb({"kind": 3}),
                                     msgpack.packb({"no": "kind"})])
def test_garbage_is_refused(payload):
    with pytest.raises(HandoverProtocolError):
        MessageReader().feed(struct.pack(">I", len(payload)) + payload)


def test_an_oversized_length_is_refused_before_buffering():
    with pytest.raises(HandoverProtocolError, match="exceeds"):
        MessageReader(max_message=100).feed(struct.pack(">I", 101))


def test_the_highest_common_version_is_chosen():
    assert choose_version([1]) == 1
    assert choose_version([1, 2, 99]) == 2
    assert choose_version([1, 2, 3, 99]) == max(messages.VERSIONS) == 3
    assert choose_version([99]) is None
    assert choose_version([True, "1"]) is None
    assert choose_version(5) is None
