"""The object a processor dropin provides.

Like ``twisted.application.service.ServiceMaker`` it names its module as a string, so
``twistd --help`` and plugin discovery import nothing heavy.
"""

from importlib import import_module

from twisted.plugin import IPlugin
from zope.interface import alsoProvides, implementer

from namesrv.interfaces import IControllerProcessorFactory, IRequestProcessorFactory

NAMESRV_PORT = "namesrv"
CONTROLLER_PORT = "controller"


@implementer(IPlugin, IRequestProcessorFactory)
class ProcessorPlugin:
    def __init__(self, name, module, attribute, description="", port=NAMESRV_PORT):
        self.name = name
        self.module = module
        self.attribute = attribute
        self.description = description
        #: which listening port's registry the processor joins: "namesrv" (9876) or "controller"
        if port == CONTROLLER_PORT:
            alsoProvides(self, IControllerProcessorFactory)
        elif port != NAMESRV_PORT:
            raise ValueError("a processor plugin joins the %r or the %r port, not %r" % (NAMESRV_PORT, CONTROLLER_PORT,
                                                                                        port))

    def build(self, context):
        return getattr(import_module(self.module), self.attribute)(context)

    def __repr__(self):
        return "<ProcessorPlugin %s %s.%s>" % (self.name, self.module, self.attribute)
