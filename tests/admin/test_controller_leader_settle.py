"""A change or transfer sent while the named leader is not in leader state yet asks again (admin_members.to_leader)."""

from argparse import Namespace

import pytest

from namesrv.admin.connection import RemoteError
from namesrv.controller import admin, admin_members
from namesrv.protocol.codes import RequestCode, ResponseCode


class Answers:
    """A client whose controller answers are given in order: a response code raises as the real one does."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.asked = []

    def call_ok(self, address, code, ext=None, body=None, accept=(ResponseCode.SUCCESS,), kind="name server"):
        self.asked.append((address, code))
        answer = self.answers.pop(0)
        if isinstance(answer, int):
            raise RemoteError(address, answer, "no")
        return answer


class Clock:
    def __init__(self):
        self.now = 0.0
        self.slept = []

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def leaders(monkeypatch):
    """The leader ``-a`` names, each time it is asked: n0's address, then n3's (the transfer's target)."""
    named = ["127.0.0.1:9808", "127.0.0.1:9838"]
    monkeypatch.setattr(admin_members, "leader_address",
                        lambda client, args: named[0] if len(named) == 1 else named.pop(0))
    return named


def test_a_leader_not_in_leader_state_yet_is_asked_again_and_the_leader_named_again(leaders):
    client, clock = Answers(ResponseCode.CONTROLLER_NOT_LEADER, "configuration"), Clock()
    answer = admin_members.to_leader(client, Namespace(), RequestCode.CONTROLLER_REMOVE_MEMBER, {"controllerId": "n0"},
                                     sleep=clock.sleep, clock=lambda: clock.now)
    assert answer == "configuration"
    assert client.asked == [("127.0.0.1:9808", RequestCode.CONTROLLER_REMOVE_MEMBER),
                            ("127.0.0.1:9838", RequestCode.CONTROLLER_REMOVE_MEMBER)]
    assert clock.slept == [admin_members.LEADER_RETRY]


def test_it_gives_up_with_the_leaders_answer_after_the_bound(leaders):
    many = int(admin_members.LEADER_SETTLE / admin_members.LEADER_RETRY) + 2
    client, clock = Answers(*[ResponseCode.CONTROLLER_NOT_LEADER] * many), Clock()
    with pytest.raises(RemoteError) as raised:
        admin_members.to_leader(client, Namespace(), RequestCode.CONTROLLER_TRANSFER_LEADER, {"toControllerId": "any"},
                                sleep=clock.sleep, clock=lambda: clock.now)
    assert raised.value.code == ResponseCode.CONTROLLER_NOT_LEADER
    assert admin_members.LEADER_SETTLE <= clock.now <= admin_members.LEADER_SETTLE + admin_members.LEADER_RETRY


def test_any_other_refusal_is_the_answer_at_once(leaders):
    client, clock = Answers(ResponseCode.CONTROLLER_INVALID_REQUEST), Clock()
    with pytest.raises(RemoteError) as raised:
        admin_members.to_leader(client, Namespace(), RequestCode.CONTROLLER_ADD_MEMBER, {"controllerId": "n3"},
                                sleep=clock.sleep, clock=lambda: clock.now)
    assert raised.value.code == ResponseCode.CONTROLLER_INVALID_REQUEST and clock.slept == []


def test_no_leader_named_yet_is_asked_again_until_one_is(monkeypatch):
    """Right after a transfer, no member of ``-a`` may name the new leader yet (docs/controller.md's script once
    failed so on its removeController, beside two fault labs)."""
    named = [None, None, "127.0.0.1:9838"]

    def leader_address(client, args):
        leader = named.pop(0)
        if leader is None:
            raise admin.NoLeaderKnown("127.0.0.1:9808: no controller leader of group g is known yet")
        return leader
    monkeypatch.setattr(admin_members, "leader_address", leader_address)
    client, clock = Answers("configuration"), Clock()
    answer = admin_members.to_leader(client, Namespace(), RequestCode.CONTROLLER_REMOVE_MEMBER, {"controllerId": "n0"},
                                     sleep=clock.sleep, clock=lambda: clock.now)
    assert answer == "configuration"
    assert client.asked == [("127.0.0.1:9838", RequestCode.CONTROLLER_REMOVE_MEMBER)]
    assert clock.slept == [admin_members.LEADER_RETRY] * 2


def test_no_leader_named_within_the_bound_is_the_answer(monkeypatch):
    def leader_address(client, args):
        raise admin.NoLeaderKnown("127.0.0.1:9808: no controller leader of group g is known yet")
    monkeypatch.setattr(admin_members, "leader_address", leader_address)
    client, clock = Answers(), Clock()
    with pytest.raises(admin.NoLeaderKnown):
        admin_members.to_leader(client, Namespace(), RequestCode.CONTROLLER_ADD_MEMBER, {"controllerId": "n3"},
                                sleep=clock.sleep, clock=lambda: clock.now)
    assert admin_members.LEADER_SETTLE <= clock.now <= admin_members.LEADER_SETTLE + admin_members.LEADER_RETRY
    assert client.asked == []
