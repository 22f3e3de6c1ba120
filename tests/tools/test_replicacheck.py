"""tools.replicacheck over real processes, one round: a broker on more than 10,000 topics leaves while the
worker answers reads, and no read sees the publication of its removal half applied."""

from tools import replicacheck


def test_one_round_of_a_broker_leaving_is_never_seen_half_applied(tmp_path):
    figures = replicacheck.check(rounds=1, topics=10500, readers=1, hold=0.3, workdir=tmp_path)
    assert figures["reads"] > 0 and figures["half_applied"] == 0, figures
