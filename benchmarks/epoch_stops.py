"""What stopping VCs at quota epochs costs by itself, without any loan: the Helios-like
trace's VCs simulated in this process under `quota=none`, three ways, each in a fresh process.

    python benchmarks/epoch_stops.py [--days 60] [--policy fifo] [--period-s 300] [--repeat 1]
                                     [--groups-of 4 16]

- `straight`: every VC runs to its end, one after the other (as a `quota=none` window does);
- `per_vc`: every VC, one after the other, stops at each epoch that follows one of its events;
- `lockstep`: at each epoch, every VC with events before it runs up to it, VC after VC (as a
  cohort decided inside its VC group is run under `quota=borrow`).

`per_vc` and `lockstep` make the same stops; they differ only in how the VCs take turns.
`--groups-of K ...` adds, per K, `lockstep/K`: the VCs in groups of K (layout order), each group in
lockstep over the whole trace, then the next: the same stops again, with K VCs taking turns rather
than all of them, which shows whether the cost grows with the VCs whose state alternates. The
events and results are the same in all of them. The time of each is that of the simulation alone
(the trace is loaded and the simulators fed before the clock starts). Prints one line per way, and
with --repeat N the fastest of N runs.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time

WAYS = ("straight", "per_vc", "lockstep")


def one(days: int, policy: str, period: int, way: str, group: int | None = None) -> dict:
    from raysim.cluster.layout import layout_from_vc_nodes
    from raysim.quota.exchange import epoch_after
    from raysim.runtime.codec import jobs_batch, split_by_vc
    from raysim.runtime.spec import RunSpec
    from raysim.sim import SimParams
    from raysim.trace.synth import load_synth

    trace = load_synth({"preset": "helios", "days": days, "seed": 0})
    layout = layout_from_vc_nodes(trace.vc_nodes, 8)
    spec = RunSpec(policy, "consolidate", SimParams.for_mode("clean"), layout)
    sims = {vc: spec.make_simulator(vc) for vc in layout}
    for vc, cols in split_by_vc(jobs_batch(trace.table, None)).items():
        sims[vc].add_jobs(cols)
    t0, stops = spec.t0, 0
    start = time.perf_counter()
    if way == "straight":
        for sim in sims.values():
            sim.run()
    elif way == "per_vc":
        for sim in sims.values():
            nxt = sim.next_event_time()
            while nxt < math.inf:
                nxt = sim.run(until=epoch_after(int(nxt), t0, period))
                stops += 1
    else:
        names = list(sims)
        k = group or len(names)
        for i in range(0, len(names), k):
            turns = {vc: sims[vc] for vc in names[i:i + k]}
            nxt = {vc: sim.next_event_time() for vc, sim in turns.items()}
            while (first := min(nxt.values())) < math.inf:
                e = epoch_after(int(first), t0, period)
                for vc, sim in turns.items():
                    if nxt[vc] < e:
                        nxt[vc] = sim.run(until=e)
                        stops += 1
    wall = time.perf_counter() - start
    return {"way": way if group is None else f"{way}/{group}", "days": days, "policy": policy, "period_s": period, "vcs": len(sims),
            "stops": stops, "events": sum(sim.events for sim in sims.values()),
            "finished": sum(sim.finished for sim in sims.values()), "wall_s": round(wall, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=60)
    ap.add_argument("--policy", default="fifo")
    ap.add_argument("--period-s", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each way; the fastest is shown")
    ap.add_argument("--groups-of", type=int, nargs="*", default=[], metavar="K",
                    help="also lockstep in groups of K VCs, per K")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", choices=WAYS, help=argparse.SUPPRESS)
    ap.add_argument("--group", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.period_s < 1 or args.repeat < 1 or args.days < 1 or any(k < 1 for k in args.groups_of):
        ap.error("--days, --period-s, --repeat and --groups-of must be at least 1")
    if args.one:
        print(json.dumps(one(args.days, args.policy, args.period_s, args.one, args.group)))
        return
    runs = [(way, None) for way in WAYS] + [("lockstep", k) for k in args.groups_of]
    best = {}  # the row's way (lockstep/K for groups) -> its fastest run, in the order of `runs`
    for _ in range(args.repeat):
        for way, group in runs:  # (the ways take turns, so a slower spell of the machine hits all of them)
            res = subprocess.run([sys.executable, __file__, "--days", str(args.days), "--policy", args.policy,
                                  "--period-s", str(args.period_s), "--one", way,
                                  *(["--group", str(group)] if group else [])], capture_output=True, text=True)
            if res.returncode != 0:
                sys.exit(f"{way}{f'/{group}' if group else ''}: {res.stderr.strip().splitlines()[-1]}")
            row = json.loads(res.stdout.strip().splitlines()[-1])
            if row["way"] not in best or row["wall_s"] < best[row["way"]]["wall_s"]:
                best[row["way"]] = row
    for way, row in best.items():
        print(json.dumps(row) if args.json else
              f"{way:12s} {row['wall_s']:7.2f} s  {row['stops']:>9,} stops  {row['events']:>9,} events  "
              f"x{row['wall_s'] / best['straight']['wall_s']:.2f}")


if __name__ == "__main__":
    main()
