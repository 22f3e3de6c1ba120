"""RocketMQ's ACL 1.0 request signature, byte for byte as the Java client computes it.

``AclClientRPCHook.doBeforeRequest`` adds ``AccessKey`` (and ``SecurityToken`` when set) to
the ext fields, then signs: the values of **every** ext field except ``Signature``, ordered
by key as a Java ``TreeMap<String,String>`` orders them (UTF-16 code units), concatenated,
UTF-8 encoded, followed by the raw body bytes; HmacSHA1 with the UTF-8 secret key; standard
base64 with padding. The result goes into the ``Signature`` ext field.

The server side (``PlainAccessValidator`` in 4.9, ``DefaultAuthenticationContextBuilder``
in 5.x) rebuilds the same bytes from what arrived. One exception: clients up to 4.9.3 added
``_UNIQUE_KEY_QUERY`` after signing, so 5.x leaves it out for ``version <= V4_9_3`` (400)
and we do the same (4.9.8 servers always leave it out, which breaks newer clients that
send it; no NameServer request carries it in practice).
"""

import base64
import hashlib
import hmac

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"

#: ``MQVersion.Version.V4_9_3.ordinal()``: the last client version that signed before adding the query flag.
LAST_VERSION_SIGNING_WITHOUT_QUERY_FLAG = 400


def _java_string_order(key):
    """Java compares strings by UTF-16 code unit; big-endian UTF-16 bytes compare the same way."""
    return key.encode("utf-16-be", "surrogatepass")


def _java_sorted(keys):
    """``keys`` in Java's TreeMap order. For ASCII keys (every header field a client sends) that is Python's own
    string order: only characters past the Basic Multilingual Plane sort differently in UTF-16."""
    if all(key.isascii() for key in keys):
        return sorted(keys)
    return sorted(keys, key=_java_string_order)


def signed_content(ext, body, version=None):
    """The bytes the client signed: sorted ext values without the signature, then the body."""
    ext = ext or {}
    skip_query_flag = version is not None and version <= LAST_VERSION_SIGNING_WITHOUT_QUERY_FLAG
    values = []
    for key in _java_sorted(ext):
        if key == SIGNATURE or (skip_query_flag and key == UNIQUE_MSG_QUERY_FLAG):
            continue
        value = ext[key]
        values.append("null" if value is None else value)  # Java's StringBuilder.append(null)
    content = "".join(values).encode("utf-8", "surrogatepass")
    return content + body if body else content


def calculate_signature(content, secret_key):
    """``AclSigner.calSignature``: base64(HmacSHA1(secret_key, content))."""
    digest = hmac.digest(secret_key.encode("utf-8"), content, hashlib.sha1)
    return base64.b64encode(digest).decode("ascii")


def sign_request_ext(ext, body, access_key, secret_key, security_token=None):
    """What ``AclClientRPCHook`` does to a request's ext fields (for our clients, tools and tests)."""
    signed = dict(ext or {})
    signed[ACCESS_KEY] = access_key
    if security_token is not None:
        signed[SECURITY_TOKEN] = security_token
    signed.pop(SIGNATURE, None)
    signed[SIGNATURE] = calculate_signature(signed_content(signed, body), secret_key)
    return signed


def signature_matches(ext, body, version, secret_key):
    """True when the request's ``Signature`` is the one ``secret_key`` gives; compared in constant time."""
    claimed = (ext or {}).get(SIGNATURE)
    if not claimed:
        return False
    expected = calculate_signature(signed_content(ext, body, version), secret_key)
    return hmac.compare_digest(expected.encode("ascii"), claimed.encode("utf-8", "surrogatepass"))
