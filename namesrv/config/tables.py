"""Every property, in the order the generated files list them: Java's NamesrvConfig, ControllerConfig and
NettyServerConfig, then ours."""

from namesrv.config.controllerconfig import CONTROLLER_CONFIG
from namesrv.config.namesrvconfig import NAMESRV_CONFIG
from namesrv.config.nettyserverconfig import NETTY_SERVER_CONFIG
from namesrv.config.ours import OURS

PROPERTIES = NAMESRV_CONFIG + CONTROLLER_CONFIG + NETTY_SERVER_CONFIG + OURS

BY_NAME = {p.name: p for p in PROPERTIES}
assert len(BY_NAME) == len(PROPERTIES), "a property is listed twice"


def property_named(name):
    """The Property called ``name``, or None for a key we do not know."""
    return BY_NAME.get(name)
