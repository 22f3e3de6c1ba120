"""The request-class table: every code the server answers is in it, once, for the port that answers it, and
docs/security.md shows the table as the code has it."""

import pathlib

from twisted.internet import task

from namesrv.controller.membership import ControllerMembershipProcessor
from namesrv.controller.processor import ControllerProcessor
from namesrv.dispatch import classtable
from namesrv.dispatch.classes import ADMIN_WRITE, CONTROLLER, NAMESRV, TABLE, RequestClassifier
from namesrv.protocol.command import make_request
from namesrv.service import make_service
from tests.config_for import service_config
from tests.controller.harness import ControllerHarness
from tests.fakes import Reactor

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_code_a_built_in_processor_answers_has_a_class_for_its_port(tmp_path):
    service = make_service(service_config(tmp_path), clock=task.Clock(), reactor=Reactor())
    namesrv_codes = {int(code) for processor in service.registry.processors for code in processor.codes}
    controller_codes = {int(code) for processor in (ControllerProcessor, ControllerMembershipProcessor)
                        for code in processor.codes}
    assert namesrv_codes - set(int(code) for code in TABLE) == set()
    assert controller_codes - set(int(code) for code in TABLE) == set()
    assert {int(code) for code, entry in TABLE.items() if NAMESRV in entry.ports} == namesrv_codes
    assert {int(code) for code, entry in TABLE.items() if CONTROLLER in entry.ports} == controller_codes
    assert service.chain.classifier.known(103) and not service.chain.classifier.known(4343)


def test_the_controller_port_classifies_with_the_same_table():
    harness = ControllerHarness()
    assert harness.chain.classifier.classify(1003) == "broker_control"
    assert harness.chain.classifier.classify(1009) == ADMIN_WRITE


def test_a_header_may_make_a_request_an_admins_and_names_its_resources():
    classifier = RequestClassifier()
    elect = make_request(1002, {"clusterName": "c", "brokerName": "b", "designateElect": "true"})
    assert classifier.classify_request(elect) == ADMIN_WRITE and classifier.classify(1002) == "broker_control"
    assert classifier.resources(elect) == [("Cluster", "c"), ("Broker", "b")]
    assert classifier.resources(make_request(105, {"topic": "T"})) == [("Topic", "T")]
    assert classifier.resources(make_request(106, {})) == []
    assert classifier.classify(4343) == ADMIN_WRITE and not classifier.known(4343)
    assert RequestClassifier({4343: "routeRead"}).classify(4343) == "route_read"


def test_docs_security_holds_the_generated_table():
    doc = (ROOT / "docs" / "security.md").read_text()
    assert classtable.section_of(doc) == classtable.render(), \
        "regenerate the table of docs/security.md: python -m namesrv.dispatch.classtable"
