"""Command line: ``namesrv-admin [-n host:port;...] [--json] <subCommand> [options]``.

Exit status: 0 done, 1 the server refused or could not be reached (one line on stderr),
2 bad usage. ``-n`` defaults to ``$NAMESRV_ADDR`` as in mqadmin; credentials come from
``--accessKey``/``--secretKey`` or ``$ROCKETMQ_ACCESS_KEY``/``$ROCKETMQ_SECRET_KEY``
(mqadmin reads them from ``conf/tools.yml``).
"""

import argparse
import os
import sys

from namesrv.controller import admin as controller_admin   # noqa: F401 (declares the controller sub-commands)
from namesrv.controller import admin_members   # noqa: F401 (declares the controller group's own sub-commands)
from namesrv.admin.commands import COMMANDS
from namesrv.admin.connection import AdminClient, AdminError
from namesrv.admin.output import to_json

PROG = "namesrv-admin"


def _common(parser, suppress):
    """Global options, accepted before or after the sub-command (mqadmin puts -n after it)."""
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument("-n", "--namesrvAddr", default=default,
                        help="name server address list, eg: 192.168.0.1:9876;192.168.0.2:9876")
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS if suppress else False,
                        help="print JSON instead of a table")
    parser.add_argument("--timeout", type=float, default=default, help="seconds to wait for each answer (5)")
    parser.add_argument("--accessKey", default=default, help="ACL access key ($ROCKETMQ_ACCESS_KEY)")
    parser.add_argument("--secretKey", default=default, help="ACL secret key ($ROCKETMQ_SECRET_KEY)")


def build_parser():
    parser = argparse.ArgumentParser(prog=PROG, description="Manage RocketMQ name servers (mqadmin's name-server commands).")
    _common(parser, suppress=False)
    subparsers = parser.add_subparsers(dest="command", metavar="subCommand", required=True)
    for name, (help, options, _) in COMMANDS.items():
        sub = subparsers.add_parser(name, help=help, description=help)
        for flags, kwargs in options:
            sub.add_argument(*flags, **kwargs)
        _common(sub, suppress=True)
    return parser


def credentials(args, environ):
    access_key = args.accessKey or environ.get("ROCKETMQ_ACCESS_KEY")
    secret_key = args.secretKey or environ.get("ROCKETMQ_SECRET_KEY")
    if not access_key and not secret_key:
        return None
    if not access_key or not secret_key:
        raise AdminError("ACL credentials need both an access key and a secret key")
    return access_key, secret_key


def main(argv=None, stdout=None, stderr=None, environ=None):
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    environ = os.environ if environ is None else environ
    args = build_parser().parse_args(argv)
    run = COMMANDS[args.command][2]
    client = None
    try:
        addresses = args.namesrvAddr or environ.get("NAMESRV_ADDR")
        client = AdminClient(addresses, timeout=args.timeout or 5.0, credentials=credentials(args, environ))
        output = run(client, args)
    except AdminError as e:
        stderr.write("%s: %s: %s\n" % (PROG, args.command, e))
        return 1
    finally:
        if client is not None:
            client.close()
    if args.json:
        stdout.write(to_json(output.data) + "\n")
    elif output.lines:
        stdout.write("\n".join(output.lines) + "\n")
    for error in output.errors:
        stderr.write("%s: %s: %s\n" % (PROG, args.command, error))
    return 1 if output.failed else 0
