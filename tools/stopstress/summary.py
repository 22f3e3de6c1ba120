"""The figures of a campaign: counts, and the stop times' distribution per moment."""


def percentile(values, fraction):
    """The nearest-rank percentile of sorted ``values`` (None when empty)."""
    if not values:
        return None
    rank = max(1, int(round(fraction * len(values) + 0.5)))
    return values[min(rank, len(values)) - 1]


def distribution(seconds):
    seconds = sorted(s for s in seconds if s is not None)
    return {"n": len(seconds), "min": seconds[0] if seconds else None, "p50": percentile(seconds, 0.5),
            "p90": percentile(seconds, 0.9), "p99": percentile(seconds, 0.99), "max": seconds[-1] if seconds else None}


def summary(records, bound):
    """Totals (stops, hangs: past ``bound`` or never ended, orphans, unclean: no clean shutdown logged or a
    traceback), per-moment distributions, and a Markdown ``table`` of them."""
    exited_before = sum(1 for r in records if r.get("exited_before"))
    early = sum(1 for r in records if r.get("before_reactor"))
    records = [r for r in records if not r.get("exited_before")]
    kinds = sorted({r.get("kind", "?") for r in records})
    rows = {}
    for kind in kinds + ["all"]:
        chosen = [r for r in records if kind == "all" or r.get("kind") == kind]
        rows[kind] = dict(distribution([r["seconds"] for r in chosen]), stops=len(chosen),
                          hangs=sum(1 for r in chosen if r["hung"]), orphans=sum(r["orphans"] for r in chosen),
                          unclean=sum(1 for r in chosen if not r["clean"] or r["tracebacks"]))
    total = rows["all"]
    lines = ["| moment | stops | hangs (> %.0f s) | orphans | unclean | min | p50 | p90 | p99 | max |" % bound,
             "|---|---|---|---|---|---|---|---|---|---|"]
    for kind, row in rows.items():
        lines.append("| %s | %d | %d | %d | %d | %s | %s | %s | %s | %s |" % (
            kind, row["stops"], row["hangs"], row["orphans"], row["unclean"],
            *(_ms(row[k]) for k in ("min", "p50", "p90", "p99", "max"))))
    lines.append("")
    lines.append("%d signalled before their reactor ran (ended by the signal's default action, nothing written yet); "
                 "%d had exited before the signal (an old process that handed over), not counted" % (early, exited_before))
    return {"stops": total["stops"], "hangs": total["hangs"], "orphans": total["orphans"], "unclean": total["unclean"],
            "before_reactor": early, "exited_before": exited_before,
            "by_moment": rows, "bound": bound, "table": "\n".join(lines),
            "records": [{k: v for k, v in r.items() if k not in ("logs",)} for r in records]}


def _ms(seconds):
    return "-" if seconds is None else "%.0f ms" % (seconds * 1000)
