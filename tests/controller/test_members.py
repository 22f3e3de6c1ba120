"""The member link byte by byte: the handshake proves the secret both ways, frames are checked before
they are decoded, and anything else closes the link without a byte of it turned into an object."""

import os
import pickle
import struct

import pytest
from twisted.internet import task
from twisted.internet.testing import StringTransport

from namesrv.controller.replication import members
from namesrv.controller.replication.members import (HELLO_SIZE, MAGIC, MAX_FRAME, Credentials, MemberLink,
                                                     RefusalLog)

SECRET = b"0123456789abcdef0123456789abcdef"
PEERS = ["n0", "n1", "n2"]


class Handler:
    def __init__(self):
        self.up, self.down, self.frames = [], [], []

    def link_up(self, link):
        self.up.append(link.peer_id)

    def link_down(self, link):
        self.down.append(link.peer_id)

    def frame_received(self, link, value):
        self.frames.append(value)


def _end(self_id, secret, dialing=None, clock=None):
    handler = Handler()
    link = MemberLink(Credentials(self_id, secret, PEERS), handler, RefusalLog(), dialing=dialing,
                      reactor=clock or task.Clock())
    transport = StringTransport()
    link.makeConnection(transport)
    return link, handler, transport


def _pump(a, ta, b, tb, rounds=4):
    for _ in range(rounds):
        for src, dst in ((ta, b), (tb, a)):
            data = src.value()
            src.clear()
            if data and not src.disconnecting:
                dst.dataReceived(data)


def _pair(dialer_secret=SECRET, acceptor_secret=SECRET):
    dialer = _end("n0", dialer_secret, dialing="n1")
    acceptor = _end("n1", acceptor_secret)
    _pump(dialer[0], dialer[2], acceptor[0], acceptor[2])
    return dialer, acceptor


def test_two_members_with_the_secret_link_up_and_exchange_frames():
    (d, dh, dt), (a, ah, at) = _pair()
    assert dh.up == ["n1"] and ah.up == ["n0"]
    assert d.send(["raft", 3, 1, 0, {"type": "response_vote", "term": 3}])
    a.dataReceived(dt.value())
    assert ah.frames == [["raft", 3, 1, 0, {"type": "response_vote", "term": 3}]]
    assert a.send(["ping"])
    d.dataReceived(at.value())
    assert dh.frames == [["ping"]]


@pytest.mark.parametrize("who", ["dialer", "acceptor"])
def test_a_member_without_the_secret_is_refused_before_anything_is_decoded(who):
    wrong = b"x" * 32
    (d, dh, dt), (a, ah, at) = _pair(dialer_secret=wrong if who == "dialer" else SECRET,
                                     acceptor_secret=wrong if who == "acceptor" else SECRET)
    assert dh.up == [] and ah.up == []
    # the dialer checks the acceptor's MAC first, so it is the one that closes
    assert dt.disconnecting


def test_a_stranger_id_is_refused_at_hello():
    link, handler, transport = _end("n1", SECRET)
    link.dataReceived(MAGIC + bytes([members.MODE_SECRET]) + b"intruder".ljust(32, b"\0") + os.urandom(32))
    assert transport.disconnecting and transport.value() == b"" and handler.up == []


def test_a_member_that_opted_out_and_one_that_did_not_do_not_link():
    (d, dh, dt), (a, ah, at) = _pair(dialer_secret=None)
    assert dh.up == [] and ah.up == [] and at.disconnecting


def test_a_group_that_opted_out_still_checks_frames():
    (d, dh, dt), (a, ah, at) = _pair(dialer_secret=None, acceptor_secret=None)
    assert dh.up == ["n1"] and ah.up == ["n0"]


def _framed(link, value):
    link.send(value)
    return link.transport.value()


def test_a_replayed_frame_closes_the_link():
    (d, dh, dt), (a, ah, at) = _pair()
    frame = _framed(d, ["ping"])
    a.dataReceived(frame)
    a.dataReceived(frame)                     # the same bytes again: its sequence number is spent
    assert ah.frames == [["ping"]] and at.disconnecting and ah.up == ["n0"]


def test_a_tampered_frame_closes_the_link():
    (d, dh, dt), (a, ah, at) = _pair()
    frame = bytearray(_framed(d, ["raft", 1, 0, 0, {"type": "response_vote", "term": 1}]))
    frame[-1] ^= 1
    a.dataReceived(bytes(frame))
    assert ah.frames == [] and at.disconnecting


def test_an_oversize_length_closes_the_link_before_its_payload_arrives():
    (d, dh, dt), (a, ah, at) = _pair()
    a.dataReceived(struct.pack(">I", MAX_FRAME + 1) + b"\0" * 32)
    assert at.disconnecting and ah.frames == []


def test_a_pickle_after_the_magic_is_never_unpickled():
    class Boom:
        def __reduce__(self):
            return (os.system, ("touch /tmp/should-not-exist",))

    link, handler, transport = _end("n1", SECRET)
    link.dataReceived(MAGIC + pickle.dumps(Boom()).ljust(HELLO_SIZE, b"\0"))
    assert transport.disconnecting and handler.up == [] and handler.frames == []
    assert not os.path.exists("/tmp/should-not-exist")


def test_a_valid_mac_on_a_pickle_still_decodes_nothing_but_msgpack():
    """Even a member holding the secret cannot make us unpickle: frames are msgpack, pickles are refused."""
    (d, dh, dt), (a, ah, at) = _pair()
    payload = pickle.dumps({"type": "append_entries"})
    mac = members._mac(d._send_key, struct.pack(">Q", 0), payload)
    a.dataReceived(struct.pack(">I", len(payload)) + mac + payload)
    assert at.disconnecting and ah.frames == []


def test_a_silent_connection_is_closed_after_the_handshake_timeout():
    clock = task.Clock()
    link, handler, transport = _end("n1", SECRET, clock=clock)
    clock.advance(members.HANDSHAKE_TIMEOUT + 0.1)
    assert transport.disconnecting


def test_refusals_are_logged_once_per_host_and_reason():
    refusals = RefusalLog()
    for _ in range(50):
        refusals.refused("10.0.0.9", "not a controller member")
    assert refusals.count == 50 and len(refusals.seen) == 1
