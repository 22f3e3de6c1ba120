"""Every scripted wrong start (tools/wrong_starts.py) ends in one line on the terminal, no traceback,
exit status 1, naming what it is about: busy ports (foreground and daemon mode), impossible ports, bad
and misspelt properties, missing files, a live instance's files, ports and controller store."""

from tools import wrong_starts


def test_every_wrong_start_is_refused_in_one_line(tmp_path):
    results = wrong_starts.run_all(str(tmp_path))
    assert len(results) >= 20
    refused = [result for result in results if wrong_starts.judge(result)]
    assert refused == results, [result for result in results if not wrong_starts.judge(result)]
    assert sum(result["tracebacks"] for result in results) == 0
