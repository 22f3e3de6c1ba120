"""Clients for the live ACL tests: a connection from a chosen loopback address, and requests signed as
``AclClientRPCHook`` signs them.

Every 127.0.0.0/8 address is the machine's own on Linux, so a client bound to 127.0.0.2 reaches a server
on 127.0.0.1 from an address that is not 127.0.0.1: an "other source" without a network namespace.
"""

import socket

from namesrv.client import BlockingRemotingClient, signed_request

ALLOWED_SOURCE = "127.0.0.1"
OTHER_SOURCE = "127.0.0.2"


def broker_user_acl(user, group):
    """The ``acls`` item of an ACL file for the user a 5.x broker of ``group`` signs as, from anywhere:
    broker-control on its group, route reads, and the cluster list it reads every 5 s
    (GET_BROKER_CLUSTER_INFO, an admin read naming no resource)."""
    return ("  - subject: User:%s\n"
            "    policies:\n"
            "      - entries:\n"
            "          - {resource: \"Broker:%s\", actions: [BrokerControl]}\n"
            "          - {resource: \"Topic:*\", actions: [RouteRead]}\n"
            "          - {resource: \"Cluster:*\", actions: [AdminRead]}\n") % (user, group)


#: an ACL file with an ACL 1.0 admin, the users of broker groups broker-a and broker-b
#: (``broker_user_acl``) and a reading user, from anywhere
GROUPS_ACL = """
accounts:
  - {accessKey: opsAdmin10, secretKey: ops-admin-secret-10, admin: "true"}
users:
  - {username: brokerA, password: brokerA-secret-123}
  - {username: brokerB, password: brokerB-secret-123}
  - {username: reader22, password: reader22-secret-123}
acls:
""" + broker_user_acl("brokerA", "broker-a") + broker_user_acl("brokerB", "broker-b") + """\
  - subject: User:reader22
    policies:
      - entries:
          - {resource: "*", actions: [RouteRead, AdminRead]}
"""
ADMIN10 = ("opsAdmin10", "ops-admin-secret-10")
BROKER_A = ("brokerA", "brokerA-secret-123")
BROKER_B = ("brokerB", "brokerB-secret-123")
READER = ("reader22", "reader22-secret-123")


class SourcedClient(BlockingRemotingClient):
    """The blocking test client, its socket bound to ``source`` before it connects to 127.0.0.1:``port``."""

    def __init__(self, port, source=ALLOWED_SOURCE, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def signed(code, ext=None, body=None, credentials=None, **kwargs):
    """A request, signed with ``credentials`` ((accessKey, secretKey)) when given."""
    return signed_request(code, ext, body, credentials, **kwargs)


def tampered(request):
    """``request`` with its header changed after it was signed: a resource it names renamed, or a field added
    (a signature carried over to a request it was not made for)."""
    ext = dict(request.ext)
    for field in ("topic", "brokerName", "clusterName", "cluster"):
        if field in ext:
            ext[field] = ext[field] + "-x"
            break
    else:
        ext["extra"] = "1"
    return request.with_changes(ext=ext)
