"""The alert rules and the scrape configuration with the real tools: ``promtool check`` and
``promtool test rules`` (tests/monitoring/rules.test.yml), and the shape every alert must have."""

import os
import re
import subprocess

import pytest
import yaml

from tests.integration.server import REPO
from tests.monitoring.prometheus import CONTROLLER_RULES, MISSING, PROMTOOL, RULES, SCRAPE_CONFIG

HERE = os.path.dirname(os.path.abspath(__file__))
RULE_TESTS = os.path.join(HERE, "rules.test.yml")
RUNBOOK = os.path.join(REPO, "docs", "runbook.md")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason=MISSING)


def alert_rules(files=(RULES, CONTROLLER_RULES)):
    rules = []
    for path in files:
        with open(path) as f:
            rules += [rule for group in yaml.safe_load(f)["groups"] for rule in group["rules"] if "alert" in rule]
    return rules


def promtool(*args):
    done = subprocess.run([PROMTOOL, *args], cwd=HERE, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@needs_promtool
def test_rules_and_scrape_configuration_pass_promtool_check():
    for path in (RULES, CONTROLLER_RULES):
        assert "SUCCESS: %d rules found" % len(alert_rules([path])) in promtool("check", "rules", path)
    assert "is valid prometheus config file syntax" in promtool("check", "config", SCRAPE_CONFIG)


@needs_promtool
def test_every_alert_fires_and_stays_quiet_in_promtool_unit_tests():
    promtool("test", "rules", RULE_TESTS)


def test_every_alert_has_a_unit_test_where_it_fires_and_series_it_must_ignore():
    with open(RULE_TESTS) as f:
        tests = yaml.safe_load(f)["tests"]
    fired, series = {}, {}
    for case in tests:
        for check in case["alert_rule_test"]:
            fired.setdefault(check["alertname"], []).extend(check["exp_alerts"])
            series.setdefault(check["alertname"], []).extend(case["input_series"])
    for rule in alert_rules():
        name = rule["alert"]
        assert fired.get(name), "%s is never shown firing in rules.test.yml" % name
        # promtool compares the whole list, so one more series than alerts is a quiet case
        assert len(series[name]) > len(fired[name]), "%s has no series that must not fire it" % name


def test_every_alert_has_a_severity_a_summary_and_a_runbook_section():
    with open(RUNBOOK) as f:
        anchors = {re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
                   for line in f if line.startswith("#")}
    for rule in alert_rules():
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
        url = rule["annotations"]["runbook_url"]
        assert url.endswith("docs/runbook.md#" + rule["alert"].lower()), url
        assert rule["alert"].lower() in anchors, "docs/runbook.md has no section %s" % rule["alert"]


NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def _described(path):
    """What docs/monitoring.md says of the rules file ``path``: the paragraph that names it, and its count."""
    with open(os.path.join(REPO, "docs", "monitoring.md")) as f:
        text = " ".join(f.read().split())
    name = os.path.basename(path)
    (said,) = re.findall(r"`conf/prometheus/%s`(?:(?!\. ).)*?(?:has|adds) (\d+) alert rules(.*?)\. (?:\[|Replace|`conf)"
                         % re.escape(name), text)
    return int(said[0]), said[1]


@pytest.mark.parametrize("path", [RULES, CONTROLLER_RULES], ids=os.path.basename)
def test_monitoring_md_says_what_each_rules_file_holds(path):
    """The guide's count of each rules file's alerts, and of their severities where it gives them, is the
    file's: it said "two critical alerts" of a file that had four."""
    rules = alert_rules([path])
    count, details = _described(path)
    assert count == len(rules)
    for severity in ("critical", "warning"):
        said = re.search(r"(\w+) %ss?\b" % severity, details)
        if said:
            assert NUMBERS[said.group(1)] == sum(r["labels"]["severity"] == severity for r in rules), said.group(0)
    if path == CONTROLLER_RULES:   # few enough to be named one by one
        assert set(re.findall(r"`(Controller\w+)`", details)) == {r["alert"] for r in rules}
