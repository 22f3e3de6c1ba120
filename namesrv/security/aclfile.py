"""The credentials file: Java's ``plain_acl.yml`` (ACL 1.0) read as it is, plus ACL 2.0's users and ACLs.

ACL 1.0, so one file serves brokers and us: ``globalWhiteRemoteAddresses``, and per account
``accessKey``, ``secretKey``, ``whiteRemoteAddress`` and ``admin``. Topic and group permissions
(``topicPerms``, ``groupPerms``, ``default*Perm``) are accepted and ignored. An ``admin`` account may
do everything; any other may read (route reads and admin reads): brokers and tools that change
something sign with an admin account, or get a policy below.

ACL 2.0 (RIP-68), as Java's ``UserInfo`` and ``AclInfo`` bodies write them::

    users:
      - {username: broker-a, password: ..., userType: Normal, userStatus: enable}
    acls:
      - subject: User:broker-a
        policies:
          - entries:
              - {resource: "Broker:broker-a", actions: [BrokerControl, RouteRead], sourceIps: [10.0.1.0/24],
                 decision: Allow}

A ``Super`` user may do everything (as in Java, its policies are not consulted); any other user may do
what its entries allow (namesrv/security/grants.py), nothing else. A username is the AccessKey a client
signs with and its password the SecretKey. One name may not be both an ACL 1.0 account and a user.

Differences from Java's ``PlainPermissionManager``, on purpose:

- every scalar is read as a string (YAML's ``BaseLoader``): ``secretKey: 0123`` stays
  ``"0123"`` where snakeyaml would turn it into the number 83;
- an accessKey listed twice, or a bad address pattern, refuses the whole file instead
  of silently keeping the last entry;
- the file's content is never logged (Java logs it, secret keys included).

PyYAML is imported only when ACL is enabled. A file whose content is JSON is read without it.
"""

import json
from dataclasses import dataclass, field

from namesrv.dispatch.classes import ADMIN_READ, ALL_CLASSES, ROUTE_READ
from namesrv.security.addresses import AddressMatcher
from namesrv.security.grants import Grant, GrantError, Resource, decide, parse_actions, parse_decision

#: Java's ``AclConstants.ACCESS_KEY_MIN_LENGTH`` / ``SECRET_KEY_MIN_LENGTH``: keys must be longer.
KEY_MIN_LENGTH = 6


class AclFileError(ValueError):
    """The credentials file cannot be used; the message names the file and the problem, never a secret."""


#: what an ACL 1.0 account without ``admin`` may do: read
READ_ONLY = (Grant(Resource(), frozenset([ROUTE_READ, ADMIN_READ])),)
#: what an ACL 1.0 admin or an ACL 2.0 Super user may do
EVERYTHING = (Grant(Resource(), frozenset(ALL_CLASSES)),)


@dataclass(frozen=True)
class Account:
    """Who signs (an ACL 1.0 account or an ACL 2.0 user) and what it may do."""

    access_key: str
    secret_key: str = field(repr=False)
    admin: bool = False
    white_addresses: AddressMatcher = field(default_factory=AddressMatcher)
    grants: tuple = READ_ONLY
    enabled: bool = True
    kind: str = "account"      # "account" (ACL 1.0) or "user" (ACL 2.0)

    def refusal(self, request_class, resources, host):
        """``None`` when this account may send ``request_class`` on ``resources`` from ``host``, else
        ``(resource, why)``."""
        return decide(self.grants, request_class, resources, host)


@dataclass(frozen=True)
class AclTable:
    accounts: dict = field(default_factory=dict)
    global_white_addresses: AddressMatcher = field(default_factory=AddressMatcher)

    def account(self, access_key):
        return self.accounts.get(access_key)


def _parse_document(text, path):
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            return json.loads(text)
        except ValueError as e:
            raise AclFileError("%s: not valid JSON: %s" % (path, e))
    try:
        import yaml
    except ImportError:
        raise AclFileError("%s: reading plain_acl.yml needs PyYAML (pip install pyyaml), "
                           "or write the same structure as JSON" % path)
    try:
        return yaml.load(text, Loader=yaml.BaseLoader)
    except yaml.YAMLError as e:
        raise AclFileError("%s: not valid YAML: %s" % (path, str(e).splitlines()[0] if str(e) else e))


def _text(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


def _flag(value):
    return _text(value).lower() in ("true", "yes", "on", "y")


def _addresses(value, path, where):
    if isinstance(value, list):
        value = ",".join(_text(v) for v in value if _text(v))
    try:
        return AddressMatcher.parse(_text(value))
    except ValueError as e:
        raise AclFileError("%s: %s: %s" % (path, where, e))


def parse_acl(text, path="<acl>"):
    """Build an AclTable from the file's text; raises AclFileError."""
    data = _parse_document(text, path)
    if data is None or data == "":
        data = {}
    if not isinstance(data, dict):
        raise AclFileError("%s: expected a mapping with 'accounts' at the top" % path)
    global_white = _addresses(data.get("globalWhiteRemoteAddresses") or [], path, "globalWhiteRemoteAddresses")
    accounts = {}
    raw_accounts = data.get("accounts") or []
    if not isinstance(raw_accounts, list):
        raise AclFileError("%s: 'accounts' must be a list" % path)
    for index, raw in enumerate(raw_accounts):
        if not isinstance(raw, dict):
            raise AclFileError("%s: accounts[%d] must be a mapping" % (path, index))
        access_key = _text(raw.get("accessKey"))
        secret_key = _text(raw.get("secretKey"))
        if len(access_key) <= KEY_MIN_LENGTH or len(secret_key) <= KEY_MIN_LENGTH:
            raise AclFileError("%s: accounts[%d] (accessKey=%r): accessKey and secretKey must both be "
                               "longer than %d characters" % (path, index, access_key, KEY_MIN_LENGTH))
        if access_key in accounts:
            raise AclFileError("%s: accessKey %r is defined more than once" % (path, access_key))
        admin = _flag(raw.get("admin"))
        accounts[access_key] = Account(
            access_key=access_key, secret_key=secret_key, admin=admin,
            white_addresses=_addresses(raw.get("whiteRemoteAddress"), path,
                                       "accounts[%d].whiteRemoteAddress" % index),
            grants=EVERYTHING if admin else READ_ONLY)
    users = _users(data.get("users") or [], path, accounts)
    _grant(data.get("acls") or [], path, users)
    accounts.update(users)
    return AclTable(accounts=accounts, global_white_addresses=global_white)


def _users(raw_users, path, accounts):
    """ACL 2.0 users, without their grants yet: {username: Account}."""
    if not isinstance(raw_users, list):
        raise AclFileError("%s: 'users' must be a list" % path)
    users = {}
    for index, raw in enumerate(raw_users):
        if not isinstance(raw, dict):
            raise AclFileError("%s: users[%d] must be a mapping" % (path, index))
        name, password = _text(raw.get("username")), _text(raw.get("password"))
        if len(name) <= KEY_MIN_LENGTH or len(password) <= KEY_MIN_LENGTH:
            raise AclFileError("%s: users[%d] (username=%r): username and password must both be longer than %d "
                               "characters" % (path, index, name, KEY_MIN_LENGTH))
        if name in users or name in accounts:
            raise AclFileError("%s: %r is defined more than once (a user and an account share one name space)"
                               % (path, name))
        kind = _text(raw.get("userType") or "Normal").lower()
        status = _text(raw.get("userStatus") or "enable").lower()
        if kind not in ("super", "normal") or status not in ("enable", "disable"):
            raise AclFileError("%s: users[%d] (username=%r): userType is Super or Normal and userStatus enable or "
                               "disable" % (path, index, name))
        users[name] = Account(access_key=name, secret_key=password, admin=kind == "super",
                              grants=EVERYTHING if kind == "super" else (), enabled=status == "enable", kind="user")
    return users


def _grant(raw_acls, path, users):
    """Give each Normal user of ``users`` the entries of its ``acls`` (a Super user keeps everything)."""
    if not isinstance(raw_acls, list):
        raise AclFileError("%s: 'acls' must be a list" % path)
    for index, raw in enumerate(raw_acls):
        where = "%s: acls[%d]" % (path, index)
        if not isinstance(raw, dict):
            raise AclFileError("%s must be a mapping" % where)
        kind, _, name = _text(raw.get("subject")).partition(":")
        user = users.get(name)
        if kind.lower() != "user" or user is None:
            raise AclFileError("%s: subject %r names no user of this file (User:<username>)"
                               % (where, _text(raw.get("subject"))))
        grants = []
        for p_index, policy in enumerate(_list(raw.get("policies"), where + ".policies")):
            for e_index, entry in enumerate(_list(policy.get("entries") if isinstance(policy, dict) else None,
                                                  "%s.policies[%d].entries" % (where, p_index))):
                grants.extend(_entry(entry, "%s.policies[%d].entries[%d]" % (where, p_index, e_index), path))
        if not user.admin:
            users[name] = Account(access_key=user.access_key, secret_key=user.secret_key, admin=False,
                                  grants=user.grants + tuple(grants), enabled=user.enabled, kind="user")


def _list(value, where):
    if not isinstance(value, list):
        raise AclFileError("%s must be a list" % where)
    return value


def _entry(raw, where, path):
    """One policy entry: one Grant per resource (Java's entry has one; a list is read as several)."""
    if not isinstance(raw, dict):
        raise AclFileError("%s must be a mapping" % where)
    try:
        resources = raw.get("resource")
        resources = resources if isinstance(resources, list) else [resources]
        classes = parse_actions(raw.get("actions"), where)
        decision = parse_decision(raw.get("decision"), where)
        sources = _addresses(raw.get("sourceIps") or [], path, where + ".sourceIps")
        return [Grant(Resource.parse(_text(resource)), classes, sources, decision) for resource in resources]
    except GrantError as e:
        raise AclFileError("%s: %s" % (where, e) if not str(e).startswith(where) else str(e))


def load_acl_file(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise AclFileError("cannot read the ACL file %s: %s" % (path, e.strerror or e))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise AclFileError("%s: not UTF-8" % path)
    return parse_acl(text, path)
