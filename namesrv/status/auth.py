"""Who may see the page: exactly who may send an admin-read request.

With ``aclEnable`` and ``adminRead`` in ``aclSignedClasses``, a browser cannot sign
requests, so it sends the same account's ``accessKey``/``secretKey`` as HTTP Basic
credentials (user = accessKey, password = secretKey), checked against the same
``AclStore`` (reloads included), white lists and policies as the trust policy's: the
account must be enabled and allowed admin reads (of everything: the page shows every
cluster) from the browser's address. Use it over loopback or a TLS proxy: Basic
credentials are readable on the wire.
"""

import base64
import binascii
import hmac

from namesrv.dispatch.classes import ADMIN_READ, parse_class_list


class PageAccess:
    def __init__(self, config, acl_store):
        self.config = config
        self.acl_store = acl_store

    def required(self):
        if self.acl_store is None or not self.config.aclEnable:
            return False
        try:
            return ADMIN_READ in parse_class_list(self.config.aclSignedClasses)
        except ValueError:
            return True   # a bad live value: stay closed rather than open

    def problem(self, client_host, authorization):
        """None when the page may be shown, else why not (sent with 401)."""
        if not self.required():
            return None
        table = self.acl_store.table
        host = client_host
        if table.global_white_addresses.matches(host):
            return None
        access_key, secret_key = _basic(authorization)
        if access_key is None:
            return "credentials required: accessKey and secretKey of an ACL account"
        account = table.account(access_key)
        if account is None:
            return "No acl config for %s" % access_key
        if not account.enabled:
            return "User:%s is disabled" % access_key
        if not account.white_addresses.matches(host) and not hmac.compare_digest(
                account.secret_key.encode("utf-8"), secret_key.encode("utf-8")):
            return "wrong secretKey for accessKey=%s" % access_key
        refusal = account.refusal(ADMIN_READ, [], host)
        if refusal is not None:
            return "accessKey %s may not read everything (admin_read on %s): %s" % (access_key, *refusal)
        return None


def _basic(header):
    """(user, password) of an ``Authorization: Basic`` header, or (None, None)."""
    if not header:
        return None, None
    if isinstance(header, bytes):
        header = header.decode("latin-1")
    scheme, _, encoded = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None, None
    try:
        user, sep, password = base64.b64decode(encoded.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None, None
    if not sep or not user:
        return None, None
    return user, password
