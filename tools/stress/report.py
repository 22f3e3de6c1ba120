"""What the runs of a stressed suite found: every test that failed at least once, in which runs, and
where each run's log is kept.

Each run leaves ``run-NN/junit.xml`` (pytest's ``--junitxml``) and ``run-NN/output.txt`` (its ``-rA``
output: every test's outcome and the captured output of those that failed). A run that ended without
a failed test case but with a non-zero status (a collection error, processes left running by the
tests: tests/leftovers.py, a run ended at its time limit) counts as failed too, under its own name. A run the
series was stopped in (Ctrl-C, SIGTERM) is listed as stopped and counts neither way: nothing in it failed.
"""

import json
import os
import xml.etree.ElementTree as ElementTree

#: pytest's exit statuses that mean every test passed (or none was collected)
PASSED_STATUSES = (0, 5)


def test_id(case):
    """A test case of a junit file as pytest names it: ``path::Class::name[param]`` (xunit1 has ``file``)."""
    path = case.get("file")
    classname = case.get("classname") or ""
    name = case.get("name") or "?"
    if path:
        module = os.path.splitext(path)[0].replace(os.sep, ".")
        inner = classname[len(module) + 1:] if classname.startswith(module + ".") else ""
        return "::".join(part for part in (path, inner.replace(".", "::"), name) if part)
    return "%s::%s" % (classname, name) if classname else name


def read_junit(path):
    """``(outcomes, message)`` of one run: {test id: "passed"|"failed"|"error"|"skipped"}, and
    {test id: the first lines of its failure}. Empty when the file is missing or unreadable."""
    outcomes, messages = {}, {}
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return outcomes, messages
    for case in root.iter("testcase"):
        ident = test_id(case)
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "error"
                text = (child.get("message") or "") + "\n" + (child.text or "")
                messages.setdefault(ident, text.strip()[:2000])
                break
            if child.tag == "skipped":
                outcome = "skipped"
        # a test that passed and then failed in teardown has two records: the worse one stays
        if outcomes.get(ident) in ("failed", "error"):
            continue
        outcomes[ident] = outcome
    return outcomes, messages


class Report:
    """The runs so far, and what failed in them."""

    def __init__(self, directory, command, load, started):
        self.directory = directory
        self.command = command
        self.load = load
        self.started = started
        self.runs = []       # {"run", "status", "seconds", "tests", "failed": [ids], "log", "junit", "note"}
        self.failures = {}   # test id -> {"runs": [n...], "message": first message}

    def add_run(self, number, status, seconds, run_dir, note="", machine_load=None):
        """``machine_load``: the load averages (1, 5, 15 min) at the run's end: the machine may run more than
        this series' load."""
        stopped = status == "stopped"   # the series was stopped in it: it says nothing of the suite
        outcomes, messages = ({}, {}) if stopped else read_junit(os.path.join(run_dir, "junit.xml"))
        failed = sorted(ident for ident, outcome in outcomes.items() if outcome in ("failed", "error"))
        if not failed and not stopped and status not in PASSED_STATUSES:
            failed = ["(run %02d as a whole: exit status %s%s; see its output)"
                      % (number, status, ", " + note if note else "")]
            messages[failed[0]] = note
        for ident in failed:
            entry = self.failures.setdefault(ident, {"runs": [], "message": messages.get(ident, "")})
            entry["runs"].append(number)
        self.runs.append({"run": number, "status": status, "seconds": round(seconds, 1),
                          "tests": sum(1 for o in outcomes.values() if o != "skipped"),
                          "skipped": sum(1 for o in outcomes.values() if o == "skipped"),
                          "failed": failed, "log": os.path.relpath(os.path.join(run_dir, "output.txt"),
                                                                   self.directory),
                          "note": note, "machine_load": machine_load, "stopped": stopped})

    @property
    def complete(self):
        """The runs that went to their end (a stopped one says nothing of the suite)."""
        return [run for run in self.runs if not run["stopped"]]

    @property
    def passed(self):
        return bool(self.complete) and not self.failures

    def as_dict(self):
        return {"command": self.command, "load": self.load, "started": self.started, "runs": self.runs,
                "failures": self.failures, "passed": self.passed,
                "runs_passed": sum(1 for r in self.complete if not r["failed"])}

    def text(self):
        """The summary a reader wants: how many runs passed, and each test that failed with its runs and logs."""
        lines = ["stress: %d run(s) of `%s` beside %s, started %s" % (len(self.runs), self.command, self.load,
                                                                     self.started)]
        for run in self.runs:
            if run["stopped"]:
                lines.append("  run %02d: %s, not counted" % (run["run"], run["note"] or "stopped"))
                continue
            lines.append("  run %02d: exit %s, %d tests (%d skipped), %.0f s%s%s%s" % (
                run["run"], run["status"], run["tests"], run["skipped"], run["seconds"],
                ", machine load %s" % " ".join(run["machine_load"]) if run.get("machine_load") else "",
                ", %d failed" % len(run["failed"]) if run["failed"] else "",
                " (%s)" % run["note"] if run["note"] else ""))
        if not self.failures:
            lines.append("no test failed in %d complete run(s)" % len(self.complete))
        else:
            lines.append("%d test(s) failed at least once:" % len(self.failures))
            for ident, entry in sorted(self.failures.items(), key=lambda item: (-len(item[1]["runs"]), item[0])):
                logs = ", ".join(os.path.join("run-%02d" % n, "output.txt") for n in entry["runs"])
                first = (entry["message"] or "").strip().splitlines()[:1]
                lines.append("  %s: failed in %d of %d run(s) (%s); logs: %s%s" % (
                    ident, len(entry["runs"]), len(self.complete), ", ".join(str(n) for n in entry["runs"]), logs,
                    "\n      " + first[0][:300] if first else ""))
        lines.append("kept in %s" % self.directory)
        return "\n".join(lines)

    def write(self):
        with open(os.path.join(self.directory, "report.json"), "w") as f:
            json.dump(self.as_dict(), f, indent=1, sort_keys=True)
        with open(os.path.join(self.directory, "report.txt"), "w") as f:
            f.write(self.text() + "\n")
