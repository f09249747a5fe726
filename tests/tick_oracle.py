"""A deliberately naive per-second model of the reference (Lucid) semantics, used only as a test oracle.

It follows the reference simulator's semantics literally (docs/lucid.md: "Two semantic modes"): one loop iteration per simulated second, a dict per job,
lists re-sorted every second. It is slow and simple on purpose, so that the event-driven engine can
be checked against it job by job on small random traces.
"""

from __future__ import annotations


def _consolidate(free, g, per_node=8):
    """Reference consolidate placer on a list of free-GPU counts; returns [(node, count)] or None."""
    if sum(free) < g:
        return None
    avail = [n for n in range(len(free)) if free[n] > 0]
    if g <= per_node:
        for n in sorted(avail, key=lambda n: free[n]):
            if free[n] >= g:
                return [(n, g)]
        return None
    nodes = sorted(avail, key=lambda n: free[n], reverse=True)
    whole, rest = divmod(g, per_node)
    alloc = []
    if rest == 0:
        for n in nodes:
            if free[n] < per_node:
                return None
            alloc.append((n, per_node))
            if len(alloc) == whole:
                return alloc
        return None
    for n in nodes:
        if free[n] == per_node and len(alloc) < whole:
            alloc.append((n, per_node))
            continue
        if free[n] >= rest and len(alloc) == whole:
            return alloc + [(n, rest)]
        return None
    return None


def simulate(jobs, num_nodes, policy, *, per_node=8, t0=0):
    """jobs: list of dicts with submit, duration, gpu (and est for qssf), in trace order.
    Returns a list of (start, end, queue, preemptions) per job."""
    free = [per_node] * num_nodes
    J = [dict(j, remain=j["duration"], start=None, end=None, queue=0, ckpt=0, status=None,
              prio=-1, att=0, alloc=None, last=None) for j in jobs]
    que, run = [], []
    done, t, nxt = 0, t0, 0

    def place(j):
        alloc = _consolidate(free, j["gpu"], per_node)
        if alloc is None:
            return False
        for n, c in alloc:
            free[n] -= c
        j["alloc"] = alloc
        return True

    def release(j):
        for n, c in j["alloc"]:
            free[n] += c
        j["alloc"] = None

    def start(j):
        j["status"] = "run"
        if j["ckpt"] == 0:
            j["start"] = t
            j["queue"] = t - j["submit"]
        else:
            j["queue"] += t - j["last"]
        if policy in ("fifo", "sjf", "qssf"):
            j["end"] = t + j["duration"]
        que.remove(j)
        run.append(j)

    while done < len(J):
        countdown = policy in ("srtf", "tiresias")
        for j in list(run):
            if countdown:
                if j["remain"] == 0:
                    j["end"] = t
                    release(j)
                    run.remove(j)
                    done += 1
                else:
                    j["remain"] -= 1
                    j["att"] += j["gpu"]
            elif t == j["end"]:
                release(j)
                run.remove(j)
                done += 1
        new = 0
        while nxt < len(J) and J[nxt]["submit"] == t:
            J[nxt]["status"] = "pend"
            que.append(J[nxt])
            nxt += 1
            new += 1
        if policy in ("fifo", "sjf", "qssf"):
            if policy == "fifo":
                que.sort(key=lambda j: j["submit"])
            elif policy == "sjf":
                que.sort(key=lambda j: j["duration"])
            else:
                que.sort(key=lambda j: j["gpu"])
                if len(que) > new:
                    for j in que:
                        if j["prio"] == -1:
                            j["prio"] = j["est"] * j["gpu"]
                    que.sort(key=lambda j: j["prio"])
            for j in list(que):
                if not place(j):
                    break
                start(j)
        elif policy == "srtf" or t % 60 == 0:
            if policy == "srtf":
                cur = que + run
                cur.sort(key=lambda j: j["remain"])
            else:
                cur = run + que
                hi = sorted([j for j in cur if j["att"] <= 18000], key=lambda j: j["submit"])
                lo = sorted([j for j in cur if j["att"] > 18000], key=lambda j: j["submit"])
                cur = hi + lo
            quota, pre, prerun = num_nodes * per_node, [], []
            for j in cur:
                if j["gpu"] <= quota:
                    quota -= j["gpu"]
                    if j["status"] == "pend":
                        prerun.append(j)
                elif j["status"] == "run":
                    pre.append(j)
            for j in pre:
                j["ckpt"] += 1
                j["last"] = t
                j["status"] = "pend"
                j["remain"] += 40 if j["gpu"] <= 8 else 60
                release(j)
                run.remove(j)
                que.append(j)
            for j in prerun:
                if place(j):
                    start(j)
        t += 1
    return [(j["start"], j["end"], j["queue"], j["ckpt"]) for j in J]
