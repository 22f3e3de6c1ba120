"""Connections that send the member link's magic and nothing more count against the server's limits
(issue 54, item 5): 500 of them against a process allowed 384 descriptors cause no failed accept, hold
at most ``controllerMemberMaxPendingHandshakes`` descriptors, and a normal client is still answered.
The time it took is measured by ``python -m tools.member_flood``, never asserted here."""

from namesrv.protocol.codes import ResponseCode
from tools.member_flood import run


def test_five_hundred_magic_only_connections_under_384_descriptors_cost_no_accept_and_no_answer(tmp_path):
    result = run(connections=500, nofile=384, workdir=str(tmp_path))
    assert result["emfile_lines"] == 0, result["emfile_examples"]
    assert result["metadata_code"] == ResponseCode.SUCCESS and result["route_code"] == ResponseCode.SUCCESS
    assert result["held_open_by_server"] <= 16             # controllerMemberMaxPendingHandshakes
    assert result["handshake_refusals_logged"] == 1        # one line for the whole flood
