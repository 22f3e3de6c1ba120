"""``python -m bench heartbeat_stall`` at a tiny size: the steady-state rounds take the shortcut."""

from bench.scenarios import heartbeat_stall


def test_steady_rounds_use_the_unchanged_shortcut(capsys):
    assert heartbeat_stall.main(["--brokers", "3", "--topics", "20", "--rounds", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert lines[0].endswith("0 of 3 on the unchanged shortcut")
    assert lines[2].endswith("3 of 3 on the unchanged shortcut")
