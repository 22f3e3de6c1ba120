"""Which controller of ``-a`` the admin believes about the leader (controller/admin.py ``metadata``).

A member that has just started to join (not added yet, so the leader refuses its link) answers
CONTROLLER_GET_METADATA_INFO without a leader. Listed first in ``-a``, it once made every change and
listing of a fault-lab run fail for a minute while the forced survivor led (quorum-lost-forced, seeds 17
and 25): the admin must go on to the next address.
"""

from argparse import Namespace
from types import SimpleNamespace

import pytest

from namesrv.admin.connection import AdminError
from namesrv.controller import admin
from namesrv.protocol.codes import RequestCode

JOINING, LEADER, FOLLOWER = "10.0.0.1:9878", "10.0.0.3:9878", "10.0.0.2:9878"


class Controllers:
    """Each address's 1005 header, or None for one that does not answer."""

    def __init__(self, headers):
        self.headers = headers
        self.asked = []

    def call_ok(self, address, code, ext=None, body=None, accept=None, kind="name server"):
        assert code == RequestCode.CONTROLLER_GET_METADATA_INFO
        self.asked.append(address)
        header = self.headers[address]
        if header is None:
            raise AdminError("%s: connection refused" % address)
        return SimpleNamespace(ext=dict(header))


def args(*addresses):
    return Namespace(controllerAddress=";".join(addresses))


def no_leader():
    return {"group": "lab", "controllerLeaderAddress": "", "isLeader": "false"}


def names_leader(is_leader=False):
    return {"group": "lab", "controllerLeaderId": "n2", "controllerLeaderAddress": LEADER,
            "isLeader": "true" if is_leader else "false"}


def test_a_joining_member_listed_first_does_not_hide_the_leader_listed_after_it():
    client = Controllers({JOINING: no_leader(), LEADER: names_leader(is_leader=True)})
    assert admin.leader_address(client, args(JOINING, LEADER)) == LEADER
    assert client.asked == [JOINING, LEADER]


def test_the_first_that_names_a_leader_is_believed_and_the_rest_are_not_asked():
    client = Controllers({FOLLOWER: names_leader(), JOINING: no_leader(), LEADER: names_leader(is_leader=True)})
    assert admin.metadata(client, [FOLLOWER, JOINING, LEADER]) == (FOLLOWER, names_leader())
    assert client.asked == [FOLLOWER]


def test_when_nobody_knows_a_leader_the_first_answer_is_the_one_shown():
    client = Controllers({JOINING: None, FOLLOWER: no_leader(), LEADER: no_leader()})
    assert admin.metadata(client, [JOINING, FOLLOWER, LEADER]) == (FOLLOWER, no_leader())
    with pytest.raises(AdminError, match="^%s: no controller leader of group lab is known yet" % FOLLOWER):
        admin.leader_address(client, args(JOINING, FOLLOWER, LEADER))


def test_when_nobody_answers_the_last_failure_is_the_error():
    client = Controllers({JOINING: None, LEADER: None})
    with pytest.raises(AdminError, match=LEADER):
        admin.metadata(client, [JOINING, LEADER])
