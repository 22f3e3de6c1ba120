"""What an account may do: ACL 2.0's policy entries (RIP-68), over request classes instead of broker actions.

An entry names one resource, the actions it covers, the source addresses it applies to and a decision::

    {"resource": "Cluster:DefaultCluster", "actions": ["BrokerControl", "RouteRead"],
     "sourceIps": ["10.0.0.0/8"], "decision": "Allow"}

- **Resources** as Java writes them: ``*`` (anything), ``Cluster:name``, ``Topic:name``, a trailing ``*`` for a
  prefix (``Topic:order-*``) or alone for every name of the kind (``Topic:*``). Ours adds ``Broker:name``, a
  broker group (``brokerName``), since name-server requests act on brokers more than on topics.
- **Actions**: the request classes (``RouteRead``, ``BrokerControl``, ``AdminRead``, ``AdminWrite``), or
  Java's broker actions read as the classes they imply on a name server: ``Pub``/``Sub`` -> RouteRead,
  ``Get``/``List`` -> AdminRead, ``Create``/``Update``/``Delete`` -> AdminWrite, ``All``/``Any`` -> every class.
- **sourceIps**: address patterns (namesrv/security/addresses.py); none means from anywhere.

A request names up to three resources (its cluster, broker group and topic: namesrv/dispatch/classes.py).
For each, the entries matching it, the class and the source are ranked by how specific their resource is
(a literal name, then the longest prefix, then ``Kind:*``, then ``*``), and the most specific decides, a
Deny before an Allow of the same rank. The request passes when some resource is allowed and none denied:
a grant on ``Broker:broker-a`` covers that group in whatever cluster, and a Deny on ``Cluster:test`` stops
every group in it. A request that names no resource (every cluster's brokers, every topic) is decided by
the entries covering a whole kind (``*``, ``Kind:*``). Nothing allowed: denied. Java's AclAuthorizationHandler means the same ranking, but its comparator
contradicts itself for mixed patterns and sorts a Deny after an Allow; we rank as its comment says.
"""

from dataclasses import dataclass, field

from namesrv.dispatch.classes import (ADMIN_READ, ADMIN_WRITE, ALL_CLASSES, BROKER, BROKER_CONTROL, CLUSTER,
                                      ROUTE_READ, TOPIC)
from namesrv.security.addresses import AddressMatcher

ALLOW = "Allow"
DENY = "Deny"
ANY = "*"
KINDS = (CLUSTER, BROKER, TOPIC)

ACTIONS = {
    "routeread": (ROUTE_READ,), "brokercontrol": (BROKER_CONTROL,), "adminread": (ADMIN_READ,),
    "adminwrite": (ADMIN_WRITE,),
    "pub": (ROUTE_READ,), "sub": (ROUTE_READ,), "get": (ADMIN_READ,), "list": (ADMIN_READ,),
    "create": (ADMIN_WRITE,), "update": (ADMIN_WRITE,), "delete": (ADMIN_WRITE,),
    "all": ALL_CLASSES, "any": ALL_CLASSES,
}

# how specific a resource pattern is: higher wins
_ANYTHING, _WHOLE_KIND, _PREFIX, _LITERAL = 0, 1, 2, 3


class GrantError(ValueError):
    """An entry that cannot be read; the message says which part and why."""


@dataclass(frozen=True)
class Resource:
    """``*``, or a kind with a literal name, a prefix, or every name (``name`` None)."""

    kind: str = ANY
    name: str = None
    prefix: bool = False

    @classmethod
    def parse(cls, text):
        text = (text or "").strip()
        if text == ANY:
            return cls()
        kind, colon, name = text.partition(":")
        matched = [known for known in KINDS if known.lower() == kind.strip().lower()]
        if not colon or not matched or not name.strip():
            raise GrantError("resource %r is not *, nor Cluster:, Broker: or Topic: followed by a name, "
                             "a prefix* or *" % text)
        name = name.strip()
        if name == ANY:
            return cls(matched[0])
        if name.endswith(ANY):
            return cls(matched[0], name[:-1], prefix=True)
        return cls(matched[0], name)

    @property
    def rank(self):
        if self.kind == ANY:
            return _ANYTHING
        if self.name is None:
            return _WHOLE_KIND
        return _PREFIX if self.prefix else _LITERAL

    @property
    def covers_a_whole_kind(self):
        return self.name is None

    def matches(self, kind, name):
        if self.kind == ANY:
            return True
        if self.kind != kind:
            return False
        if self.name is None:
            return True
        return name.startswith(self.name) if self.prefix else name == self.name

    def __str__(self):
        if self.kind == ANY:
            return ANY
        return "%s:%s%s" % (self.kind, self.name or "", ANY if self.prefix or self.name is None else "")


@dataclass(frozen=True)
class Grant:
    """One policy entry."""

    resource: Resource
    classes: frozenset
    sources: AddressMatcher = field(default_factory=AddressMatcher)
    decision: str = ALLOW

    def applies(self, request_class, host):
        return request_class in self.classes and (not self.sources or self.sources.matches(host))

    @property
    def denies(self):
        return self.decision == DENY


def parse_actions(actions, where):
    if isinstance(actions, str):
        actions = [part for part in actions.replace(";", ",").split(",")]
    classes = set()
    for action in actions or ():
        key = str(action).strip().replace("_", "").replace("-", "").lower()
        if not key:
            continue
        if key not in ACTIONS:
            raise GrantError("%s: unknown action %r (RouteRead, BrokerControl, AdminRead, AdminWrite, or Java's "
                             "Pub, Sub, Get, List, Create, Update, Delete, All)" % (where, action))
        classes.update(ACTIONS[key])
    if not classes:
        raise GrantError("%s: no actions" % where)
    return frozenset(classes)


def parse_decision(text, where):
    text = str(text or ALLOW).strip().lower()
    if text not in ("allow", "deny"):
        raise GrantError("%s: decision %r is neither Allow nor Deny" % (where, text))
    return ALLOW if text == "allow" else DENY


def decide(grants, request_class, resources, host):
    """``None`` when ``grants`` allow ``request_class`` on ``resources`` (``[(kind, name)]``) from ``host``;
    else the resource that decided (``"Kind:name"`` or ``"*"``) and why not."""
    applicable = [grant for grant in grants if grant.applies(request_class, host)]
    if not resources:
        best = _most_specific(applicable, lambda grant: grant.resource.covers_a_whole_kind)
        return _refusal(best, ANY)
    allowed = False
    for kind, name in resources:
        best = _most_specific(applicable, lambda grant: grant.resource.matches(kind, name))
        if best is None:
            continue
        if best.denies:
            return _refusal(best, "%s:%s" % (kind, name))
        allowed = True
    if allowed:
        return None
    return (", ".join("%s:%s" % resource for resource in resources), "no policy allows it")


def _most_specific(applicable, matching):
    best = None
    for grant in applicable:
        if not matching(grant):
            continue
        key = (grant.resource.rank, len(grant.resource.name or ""), grant.denies)
        if best is None or key > best[0]:
            best = (key, grant)
    return best[1] if best is not None else None


def _refusal(grant, label):
    if grant is None:
        return (label, "no policy allows it")
    if grant.denies:
        return (label, "denied by the policy on %s" % grant.resource)
    return None
