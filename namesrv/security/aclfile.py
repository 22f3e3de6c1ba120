"""The credentials file: Java's ``plain_acl.yml``, read as it is, so one file serves brokers and us.

Only what a NameServer needs is used: ``globalWhiteRemoteAddresses``, and per account
``accessKey``, ``secretKey``, ``whiteRemoteAddress`` and ``admin``. Topic and group
permissions (``topicPerms``, ``groupPerms``, ``default*Perm``) are accepted and ignored:
no NameServer request names a topic the broker ACL would guard.

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

from namesrv.security.addresses import AddressMatcher

#: Java's ``AclConstants.ACCESS_KEY_MIN_LENGTH`` / ``SECRET_KEY_MIN_LENGTH``: keys must be longer.
KEY_MIN_LENGTH = 6


class AclFileError(ValueError):
    """The credentials file cannot be used; the message names the file and the problem, never a secret."""


@dataclass(frozen=True)
class Account:
    access_key: str
    secret_key: str = field(repr=False)
    admin: bool = False
    white_addresses: AddressMatcher = field(default_factory=AddressMatcher)


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
        accounts[access_key] = Account(
            access_key=access_key, secret_key=secret_key, admin=_flag(raw.get("admin")),
            white_addresses=_addresses(raw.get("whiteRemoteAddress"), path,
                                       "accounts[%d].whiteRemoteAddress" % index))
    return AclTable(accounts=accounts, global_white_addresses=global_white)


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
