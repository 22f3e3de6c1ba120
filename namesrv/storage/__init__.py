"""Files written safely: atomic replacement, the route snapshot, the instance id."""
