"""Print a report.json's verdict, timings, gates and margins (closest first); validate.json's too."""

import json
import sys
from pathlib import Path

for arg in sys.argv[1:]:
    p = Path(arg)
    try:
        d = json.loads(p.read_text())
    except Exception as exc:
        print(f"{p}: unreadable: {exc}")
        continue
    if "gates" not in d and "trained" in d:  # validate.json
        print(f"{p}: verdict {d.get('verdict')} cause {d.get('cause', '')!r}")
        print("  timings", d.get("timings"))
        print("  teardown", json.dumps(d.get("teardown"))[:600])
        d = d.get("trained") or {}
        if not d:
            continue
    steps = d.get("steps")
    print(f"{p}: verdict {d.get('verdict')} steps {steps if isinstance(steps, int) else len(steps or [])}")
    print("  timings", d.get("timings"))
    for g in d.get("gates", []):
        print(f"  {g['name']:<20} {g['status']:<5} {str(g.get('value'))[:110]}")
    m = d.get("margins") or {}
    if m:
        k = min(m, key=m.get)
        print(f"  margins {m}; closest: {k} {m[k]}")
