"""Who a controller member is: its own Ed25519 key, and every member's public keys.

The group's secret proves that a peer belongs to the group; it cannot say which member the peer is,
since every member holds it (a member that was removed too). So each member also has a key pair of
its own. Its private key (``controllerMemberKeyFile``) never leaves its host; the public keys of all
members are listed in one file that is the same on every member (``controllerMembersFile``)::

    # id   Ed25519 public key (base64 of its 32 bytes)
    n0 0nMWeRA1l3rTC2D1oWmwdc6r8bHXg5n8UHw4GdXoA0Q=
    n1 xZf3rTt0gtZh2T0CuXwPHf4Xh1Hcb2A2RdJ2mpRvXXE=

A member signs its side of every link's handshake (``members.py``), and the other side checks the
signature with the keys listed for the id it claims: holding the secret is no longer enough to
speak as another member. Why signatures and not mutual TLS: the member link shares the controller
port with RocketMQ clients behind an 8-byte magic, its handshake messages have fixed sizes (nothing
of variable length is read from an unauthenticated peer, which a certificate chain would be), and a
pinned key per id needs no certificate authority, no expiry and no revocation list: a member is
revoked by deleting its line.

Rotation without downtime: an id may have two lines while its key changes (both are accepted); the
member switches to its new private key, then the old line goes. Both files are read again when they
change (checked before each handshake and every second), so neither needs a restart.

``namesrv-admin createControllerKey`` writes a private key and prints the member's line.
"""

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

import base64
import binascii
import os

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

PUBLIC_KEY_SIZE = 32
SIGNATURE_SIZE = 64
#: keys one id may have at once: its current one and, during a rotation, the next
MAX_KEYS_PER_MEMBER = 2
#: the largest members file read (a line is about 50 bytes)
MAX_MEMBERS_FILE = 1 << 20
#: id -> its public keys' raw bytes (one, or two while rotating)
MembersKeys = dict[str, tuple[bytes, ...]]
T = TypeVar("T")


class IdentityError(ValueError):
    """A key or members file that cannot be used: says which file and why."""


def create_private_key(path: str) -> str:
    """A new private key written to ``path`` (mode 600, refused if it exists); its public key as text."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
        f.flush()
        os.fsync(f.fileno())
    return public_key_text(key.public_key())


def create_group_keys(directory: str, ids: Iterable[str], members_name: str = "controller.members") -> str:
    """A key per member (``<id>.key``, mode 600) and the members file listing them, in ``directory`` (a
    lab's or a test's group on one machine; real members each make their own key on their own host).
    The members file's path; the keys are where ``controllerMemberKeyFile`` looks by default."""
    lines = ["%s %s" % (member, create_private_key(os.path.join(directory, member + ".key"))) for member in ids]
    path = os.path.join(directory, members_name)
    with open(path, "w") as f:
        f.write("# id  Ed25519 public key (namesrv-admin createControllerKey)\n" + "\n".join(lines) + "\n")
    return path


def public_key_text(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def read_private_key(path: str) -> Ed25519PrivateKey:
    try:
        with open(path, "rb") as f:
            data = f.read(1 << 16)
    except OSError as e:
        raise IdentityError("controllerMemberKeyFile=%s cannot be read: %s" % (path, e.strerror or e))
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as e:
        raise IdentityError("controllerMemberKeyFile=%s is not a PEM private key: %s" % (path, e))
    if not isinstance(key, Ed25519PrivateKey):
        raise IdentityError("controllerMemberKeyFile=%s holds a %s key; members use Ed25519 "
                            "(namesrv-admin createControllerKey)" % (path, type(key).__name__))
    return key


def parse_members(text: str, path: str = "members file") -> MembersKeys:
    """{id: (public key bytes, ...)} from the members file's text; IdentityError naming the line."""
    table: MembersKeys = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise IdentityError("%s line %d: expected 'id public-key', got %r" % (path, number, line[:80]))
        member, encoded = parts
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != PUBLIC_KEY_SIZE:
            raise IdentityError("%s line %d: %s's key is not the base64 of 32 bytes" % (path, number, member))
        keys = table.setdefault(member, ())
        if raw in keys:
            continue
        if len(keys) >= MAX_KEYS_PER_MEMBER:
            raise IdentityError("%s line %d: %s has more than %d keys (one, or two while rotating)"
                                % (path, number, member, MAX_KEYS_PER_MEMBER))
        table[member] = keys + (raw,)
    return table


class _Watched(Generic[T]):
    """A file read again when its size or modification time changes (a stat, not a read, per check)."""

    def __init__(self, path: str, load: Callable[[str], T]) -> None:
        self.path = path
        self._load = load
        self._stamp: tuple[int, int, int] | None = None
        self.value: T | None = None

    def refresh(self) -> bool:
        """Read again if it changed; True when the value changed. A file that became unreadable keeps the
        last good value (and raises, so that the caller can say so)."""
        try:
            st = os.stat(self.path)
        except OSError as e:
            raise IdentityError("%s cannot be read: %s" % (self.path, e.strerror or e))
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self._stamp:
            return False
        value = self._load(self.path)
        self._stamp = stamp
        changed = value != self.value
        self.value = value
        return changed


def _read_members(path: str) -> MembersKeys:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_MEMBERS_FILE + 1)
    except OSError as e:
        raise IdentityError("controllerMembersFile=%s cannot be read: %s" % (path, e.strerror or e))
    if len(data) > MAX_MEMBERS_FILE:
        raise IdentityError("controllerMembersFile=%s is larger than %d bytes" % (path, MAX_MEMBERS_FILE))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise IdentityError("controllerMembersFile=%s is not UTF-8" % path)
    return parse_members(text, "controllerMembersFile=%s" % path)


class MemberIdentity:
    """This member's signing key and the members' public keys, both files watched.

    ``sign(data)`` signs with this member's key; ``verify(member, data, signature)`` is the key of
    ``member`` that verifies it (its raw bytes), or None.
    """

    def __init__(self, self_id: str, key_path: str, members_path: str) -> None:
        self.self_id = self_id
        self._key = _Watched(key_path, read_private_key)
        self._members = _Watched(members_path, _read_members)
        self.refresh()
        self.check_own_key()

    @property
    def members(self) -> MembersKeys:
        assert self._members.value is not None    # read in __init__, kept when a reread fails
        return self._members.value

    def refresh(self) -> bool:
        """Read whichever file changed; True when the members' keys changed."""
        self._key.refresh()
        return self._members.refresh()

    def check_own_key(self) -> None:
        """Refuse a private key whose public half the members file does not list for this id."""
        own = self._own_key().public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        if own not in self.members.get(self.self_id, ()):
            raise IdentityError("controllerMembersFile=%s does not list this member's public key (%s %s): add the "
                                "line on every member" % (self._members.path, self.self_id,
                                                          base64.b64encode(own).decode("ascii")))

    def _own_key(self) -> Ed25519PrivateKey:
        assert self._key.value is not None        # read in __init__, kept when a reread fails
        return self._key.value

    def sign(self, data: bytes) -> bytes:
        return self._own_key().sign(data)

    def verify(self, member: str, data: bytes, signature: bytes) -> bytes | None:
        for raw in self.members.get(member, ()):
            try:
                Ed25519PublicKey.from_public_bytes(raw).verify(signature, data)
                return raw
            except InvalidSignature:
                continue
        return None

    def accepts(self, member: str, raw: bytes) -> bool:
        """Is ``raw`` still one of ``member``'s keys (after a reload)?"""
        return raw in self.members.get(member, ())
