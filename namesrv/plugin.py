"""The object a processor dropin provides.

Like ``twisted.application.service.ServiceMaker`` it names its module as a string, so
``twistd --help`` and plugin discovery import nothing heavy.
"""

from importlib import import_module

from twisted.plugin import IPlugin
from zope.interface import implementer

from namesrv.interfaces import IRequestProcessorFactory


@implementer(IPlugin, IRequestProcessorFactory)
class ProcessorPlugin:
    def __init__(self, name, module, attribute, description="", port="namesrv"):
        self.name = name
        self.module = module
        self.attribute = attribute
        self.description = description
        #: which listening port's registry the processor joins: "namesrv" (9876) or "controller"
        self.port = port

    def build(self, context):
        return getattr(import_module(self.module), self.attribute)(context)

    def __repr__(self):
        return "<ProcessorPlugin %s %s.%s>" % (self.name, self.module, self.attribute)
