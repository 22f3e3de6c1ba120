"""``namesrv-admin``'s commands for the controller group itself: its members, its leader, its keys.

mqadmin has none of these (Java's controllers are fixed at start). Changes go to the leader that
CONTROLLER_GET_METADATA_INFO (1005) of ``-a`` names, as mqadmin's leader-only commands do; the
listing asks the leader too when one is known (only it knows how far each member is behind), else
the first controller of ``-a`` that answers. The requests: ``membership.py``.

Right after a leadership transfer (or an election) a member may already name the new leader while that one
does not count itself leader yet and answers CONTROLLER_NOT_LEADER (seen in a loaded run), or no member of ``-a``
names one yet (seen in a run beside two fault labs, docs/controller.md's script failing on its removeController):
a change or transfer that meets either asks again for the leader, a little later, for up to ``LEADER_SETTLE``
seconds (a script that hands leadership over and then removes the old leader must not fail on that moment).

``createControllerKey`` sends nothing: it writes a member's private key on the host it will run on
and prints the line to add to every member's ``controllerMembersFile``.
"""

import time
from argparse import Namespace
from typing import Any, Callable

from namesrv.admin.commands import command, json_body
from namesrv.admin.connection import AdminClient, AdminError, RemoteError
from namesrv.admin.output import Output, table
from namesrv.controller.admin import ADDRESSES, CONTROLLER, NoLeaderKnown, controllers, leader_address, metadata
from namesrv.controller.replication.identity import create_private_key
from namesrv.protocol.codes import RequestCode, ResponseCode

#: how long a change keeps asking while the named leader is not in leader state yet (seconds), and how often
LEADER_SETTLE = 10.0
LEADER_RETRY = 0.2

_ID = (("-i", "--controllerId"), dict(required=True, help="the member's id, as in controllerDLegerPeers (n3)"))


@command("createControllerKey", "Write a controller member's private key; print the line for controllerMembersFile.",
         _ID, (("-o", "--out"), dict(required=True, help="the private key file to write (mode 600; not overwritten)")))
def create_controller_key(client: AdminClient, args: Namespace) -> Output:
    member = args.controllerId.strip()
    try:
        public = create_private_key(args.out)
    except FileExistsError:
        raise AdminError("%s exists: a member's key is never overwritten (remove it first if that is meant)" % args.out)
    except OSError as e:
        raise AdminError("%s cannot be written: %s" % (args.out, e.strerror or e))
    line = "%s %s" % (member, public)
    return Output({"controllerId": member, "keyFile": args.out, "publicKey": public, "membersLine": line}, [line])


def _members_answer(client: AdminClient, args: Namespace) -> Any:
    """The listing from the leader when one is known, else from the first controller of ``-a`` that answers (Any:
    decoded JSON, read by key)."""
    address, header = metadata(client, controllers(args))
    target = header.get("controllerLeaderAddress") or address
    try:
        answer = client.call_ok(target, RequestCode.CONTROLLER_LIST_MEMBERS, kind=CONTROLLER)
    except AdminError:
        if target == address:
            raise
        answer = client.call_ok(address, RequestCode.CONTROLLER_LIST_MEMBERS, kind=CONTROLLER)
    return json_body(answer, "the controller group's members")


@command("listControllers", "List the controller group's members: role, leader, lag and last contact.", ADDRESSES)
def list_controllers(client: AdminClient, args: Namespace) -> Output:
    body = _members_answer(client, args)
    rows: list[list[object]] = []
    for member in body.get("members") or []:
        contact = member.get("lastContactSeconds")
        rows.append([member.get("id"), member.get("address"), member.get("role"),
                     "yes" if member.get("leader") else "", "" if member.get("lag") is None else member["lag"],
                     "" if contact is None else "%.2f" % contact, "yes" if member.get("connected") else "no"])
    lines = ["#Group\t%s" % body.get("group"), "#Leader\t%s" % (body.get("leaderId") or "none"),
             "#Epoch\t%s" % body.get("epoch"),
             "#Answered by\t%s (%s, term %s, last log entry %s of term %s)" % (
                 body.get("selfId"), body.get("role"), body.get("term"), body.get("lastLogIndex"),
                 body.get("lastLogTerm"))]
    if body.get("fenced"):
        lines.append("#Fenced\t%s" % ", ".join(body["fenced"]))
    lines.extend(table(["Id", "Address", "Role", "Leader", "Lag", "LastContact(s)", "Connected"], rows))
    return Output(body, lines)


def to_leader(client: AdminClient, args: Namespace, code: int, ext: dict[str, str],
              sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> Any:
    """``code`` answered SUCCESS by the leader ``-a`` names, asked again while none is named yet or the one named
    is not in leader state yet."""
    deadline = clock() + LEADER_SETTLE
    while True:
        try:
            return client.call_ok(leader_address(client, args), code, ext, kind=CONTROLLER)
        except NoLeaderKnown:
            if clock() >= deadline:
                raise
        except RemoteError as e:
            if e.code != ResponseCode.CONTROLLER_NOT_LEADER or clock() >= deadline:
                raise
        sleep(LEADER_RETRY)


def _change(client: AdminClient, args: Namespace, code: int, ext: dict[str, str], verb: str) -> Output:
    answer = to_leader(client, args, code, ext)
    configuration = json_body(answer, "the group's configuration")
    members = ", ".join("%s=%s%s" % (m, address, "" if role == "voter" else " (learner)")
                        for m, address, role in configuration.get("members") or [])
    return Output(configuration, ["%s: the group is now %s" % (verb, members)])


@command("addController", "Add a controller to the group as a learner (it catches up, then promoteController).",
         ADDRESSES, _ID,
         (("-r", "--memberAddress"), dict(required=True, help="the new member's controller address, host:port")))
def add_controller(client: AdminClient, args: Namespace) -> Output:
    member = args.controllerId.strip()
    return _change(client, args, RequestCode.CONTROLLER_ADD_MEMBER,
                   {"controllerId": member, "controllerAddress": args.memberAddress.strip()}, "%s added" % member)


@command("promoteController", "Make a learner that has caught up a voter of the controller group.", ADDRESSES, _ID)
def promote_controller(client: AdminClient, args: Namespace) -> Output:
    member = args.controllerId.strip()
    return _change(client, args, RequestCode.CONTROLLER_PROMOTE_MEMBER, {"controllerId": member},
                   "%s promoted" % member)


@command("removeController", "Remove a controller from the group (the leader only after transferControllerLeader).",
         ADDRESSES, _ID)
def remove_controller(client: AdminClient, args: Namespace) -> Output:
    member = args.controllerId.strip()
    return _change(client, args, RequestCode.CONTROLLER_REMOVE_MEMBER, {"controllerId": member},
                   "%s removed" % member)


@command("transferControllerLeader", "Hand the controller group's leadership over to another voter.", ADDRESSES,
         (("--to",), dict(required=True, help="the voter to lead (its id), or any")))
def transfer_controller_leader(client: AdminClient, args: Namespace) -> Output:
    answer = to_leader(client, args, RequestCode.CONTROLLER_TRANSFER_LEADER, {"toControllerId": args.to.strip()})
    result = json_body(answer, "the new leader")
    return Output(result, ["leadership handed over to %s (%s)" % (result.get("leaderId"), result.get("leaderAddress"))])
