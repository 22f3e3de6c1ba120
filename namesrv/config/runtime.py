"""Configuration from the network is an allow-list: what UPDATE_NAMESRV_CONFIG (318) and
UPDATE_CONTROLLER_CONFIG (1009) may change, all or nothing, and where the change is kept.

A key is accepted only when it is a property marked ``runtime`` in the table (table.py) and belongs to the
port's own configuration: 318 changes the name server's properties, 1009 the controller's (controllerconfig.py),
as in Java, where the two are separate objects (our embedded controller shares the name server's, so without
this split a controller request could turn the name server's limits down). Java's ``configBlackList`` keeps its
meaning on top: a runtime key it lists is refused too. A request with any refused key changes nothing and is
answered NO_PERMISSION with Java's remark ("Can not update config in black list.") followed by every refused key
and why. Java accepts any key of its config objects here, paths, ports and addresses included
(CVE-2023-37582's class), and ignores a key it does not have; both are refusals here.

An accepted change applies at once, is written to the runtime overlay (overlay.py; never to the ``-c`` file),
logged, and written to the event log as one ``config_changed`` event per key, with the peer, the account (the
request's AccessKey: checked by the ACL when ``aclEnable`` is on, what the client sent otherwise), and the old
and new values. No runtime property holds a secret (tests/config check that none is a path or a key).
"""

from namesrv.config.controllerconfig import CONTROLLER_CONFIG
from namesrv.config.origins import OVERLAY
from namesrv.config.properties import PropertiesError, parse_properties
from namesrv.config.table import ConfigError, java_text
from namesrv.config.tables import BY_NAME

#: the two requests, by the name the logs and events give them
NAMESRV = "UPDATE_NAMESRV_CONFIG"
CONTROLLER = "UPDATE_CONTROLLER_CONFIG"

CONTROLLER_KEYS = frozenset(p.name for p in CONTROLLER_CONFIG)

#: what each request may change
RUNTIME_KEYS = {
    NAMESRV: frozenset(p.name for p in BY_NAME.values() if p.runtime and p.name not in CONTROLLER_KEYS),
    CONTROLLER: frozenset(p.name for p in BY_NAME.values() if p.runtime and p.name in CONTROLLER_KEYS),
}

#: Java's remark for a black-listed key (DefaultRequestProcessor and ControllerRequestProcessor, 5.x)
BLACK_LIST_REMARK = "Can not update config in black list."

_OTHER_PORT = {
    NAMESRV: "a controller property: updateControllerConfig on the controller's port",
    CONTROLLER: "a name server property: updateNamesrvConfig on the name server's port",
}


class UpdateRefused(ValueError):
    """Keys the network may not change: answered NO_PERMISSION, nothing changed; the message is the remark."""


def why_refused(key, request, black_list):
    """Why ``request`` may not change ``key`` (a few words), or None when it may."""
    if key in black_list:
        return "configBlackList"
    prop = BY_NAME.get(key)
    if prop is None:
        return "not a property"
    if key in RUNTIME_KEYS[request]:
        return None
    if prop.runtime:
        return _OTHER_PORT[request]
    return "not changeable at run time"


def refusal_remark(refused):
    """Java's remark, then each ``(key, why)`` of ``refused`` and what to do."""
    return "%s Refused keys: %s. Only the properties marked runtime (docs/properties.md) change over the " \
           "network; set the others in the -c properties file and restart." % (
               BLACK_LIST_REMARK, ", ".join("%s (%s)" % item for item in refused))


def parse_body(body):
    """The properties of a request body (UTF-8 text, as every client sends it); ConfigError when it is not
    properties text (Java's string2Properties error)."""
    try:
        return parse_properties(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError("string2Properties error: body is not UTF-8; send the properties as UTF-8 key=value lines")
    except PropertiesError as e:
        raise ConfigError("string2Properties error: %s; send the properties as key=value lines" % e)


def update_from_network(config, body, request, black_list, peer, account, events, reactor=None):
    """Apply the properties of ``body``, sent as ``request`` by ``peer`` (``account``: its AccessKey or None).

    Returns a Deferred firing once the overlay holds the change (failing with ConfigError saying the change is
    applied but not kept), or None when the body holds no property (Java answers SUCCESS and does nothing).
    Raises UpdateRefused (NO_PERMISSION) or ConfigError (SYSTEM_ERROR: not properties text, a bad value),
    having changed nothing.
    """
    updates = parse_body(body) if body else {}
    if not updates:
        return None
    refused = [(key, why) for key, why in ((key, why_refused(key, request, black_list)) for key in sorted(updates))
               if why is not None]
    if refused:
        raise UpdateRefused(refusal_remark(refused))
    who = "%s from %s (account %s)" % (request, peer, account or "none")
    changes = config.update(updates, source=who, origin=OVERLAY)
    for key, (old, new) in sorted(changes.items()):
        events.emit("config_changed", key=key, old=_text(old), new=_text(new), peer=peer, account=account,
                    request=request)
    path = config.overlay.path
    return config.overlay.save(reactor).addErrback(lambda failure: _not_kept(path, failure))


def _not_kept(path, failure):
    raise ConfigError("config applied but not persisted to %s: %s" % (path, failure.value))


def _text(value):
    return None if value is None else java_text(value)
