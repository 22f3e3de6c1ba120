"""Address patterns: Java's ``whiteRemoteAddress`` forms plus CIDR, for ACL white lists and broker allow-lists.

Accepted forms (one pattern; lists are comma-separated):

- ``*`` (also ``*.*.*.*``): every address;
- ``192.168.0.7`` or ``::1``: one address;
- ``192.168.0.*``, ``192.168.*.*``, ``192.168.1.1-200``: per-octet wildcards and ranges (Java's
  ``RangeRemoteAddressStrategy``, which we allow in any octet);
- ``192.168.1.{1,2,3}``: Java's ``MultipleRemoteAddressStrategy``;
- ``10.0.0.0/8``, ``fd00::/8``: CIDR (our addition; Java has none).

Java's IPv6 wildcard and range forms are refused with a clear error rather than guessed at.
A bad pattern raises ``ValueError`` when the file or property is read, never per request.
"""

import ipaddress


def peer_host(peer):
    """The host part of an ``ip:port`` peer string (IPv6 hosts keep their colons)."""
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return host.strip("[]")


#: hosts whose verdict a matcher remembers (the ACL check asks for every request not answered from the cache;
#: parsing the address is most of the cost); past it the memo starts again
MEMO_SIZE = 4096


class AddressMatcher:
    """Matches a host against a list of patterns; an empty matcher matches nothing. A matcher never changes
    (a new list is a new matcher), so it remembers its verdicts for up to MEMO_SIZE hosts."""

    def __init__(self, patterns=()):
        self.patterns = tuple(patterns)
        self._everything = False
        self._exact = set()
        self._networks = []
        self._octet_rules = []
        self._memo = {}
        for pattern in self.patterns:
            self._add(pattern)

    @classmethod
    def parse(cls, text):
        """A comma-separated list (a ``{a,b}`` group counts as one pattern)."""
        patterns, depth, current = [], 0, []
        for char in text or "":
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
            if char == "," and depth == 0:
                patterns.append("".join(current))
                current = []
            else:
                current.append(char)
        patterns.append("".join(current))
        return cls(p.strip() for p in patterns if p.strip())

    def __bool__(self):
        return bool(self.patterns)

    def _add(self, pattern):
        if pattern in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
            self._everything = True
            return
        if pattern.endswith("}") and "{" in pattern:
            prefix, _, members = pattern[:-1].partition("{")
            for member in members.split(","):
                self._add(prefix + member.strip())
            return
        if "/" in pattern:
            try:
                self._networks.append(ipaddress.ip_network(pattern, strict=False))
            except ValueError:
                raise ValueError("bad address pattern %r: not a CIDR network" % pattern)
            return
        if "*" in pattern or "-" in pattern:
            self._octet_rules.append(_octet_rule(pattern))
            return
        try:
            self._exact.add(ipaddress.ip_address(pattern))
        except ValueError:
            raise ValueError("bad address pattern %r: not an IP address" % pattern)

    def matches(self, host):
        if self._everything:
            return True
        if not self.patterns:
            return False
        memo = self._memo
        verdict = memo.get(host)
        if verdict is None:
            if len(memo) >= MEMO_SIZE:
                memo.clear()
            verdict = memo[host] = self._match(host)
        return verdict

    def _match(self, host):
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        if getattr(address, "ipv4_mapped", None) is not None:
            address = address.ipv4_mapped
        if address in self._exact:
            return True
        if any(address in network for network in self._networks):
            return True
        if address.version == 4 and self._octet_rules:
            octets = [int(part) for part in str(address).split(".")]
            return any(all(low <= value <= high for value, (low, high) in zip(octets, rule))
                       for rule in self._octet_rules)
        return False


def _octet_rule(pattern):
    parts = pattern.split(".")
    if ":" in pattern or len(parts) != 4:
        raise ValueError("bad address pattern %r: wildcards and ranges are supported for IPv4 "
                         "(a.b.c.*, a.b.c.1-200); use CIDR for IPv6" % pattern)
    rule = []
    for part in parts:
        part = part.strip()
        try:
            if part == "*":
                low, high = 0, 255
            elif "-" in part:
                low, high = (int(x) for x in part.split("-", 1))
            else:
                low = high = int(part)
        except ValueError:
            raise ValueError("bad address pattern %r: octet %r" % (pattern, part))
        if not 0 <= low <= high <= 255:
            raise ValueError("bad address pattern %r: octet %r out of range" % (pattern, part))
        rule.append((low, high))
    return tuple(rule)
