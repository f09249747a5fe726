"""Loan decisions at epochs: reports in, loan operations out, in the coordinator or inside a VC group.

Epochs are the times t0 + k * period_s. At an epoch every VC of a cohort has processed every event
before it; from the VCs' quota reports the lending policy (raysim.quota.lending) decides the
operations, which act at the epoch itself, before its events. An epoch at which no VC of the
cohorts being decided changed since the last decision would decide nothing (the reports are those
the last, empty, decision saw), so it is skipped; the first epoch after a change never is.
Decisions thus depend on the simulated state only: not on the runtime, the window length, how VCs
are packed or where a cohort is decided (raysim.quota.cohorts).

- `EpochExchange` decides, in the coordinator, the cohorts split over several VC groups. Its
  windows end at epochs (the window length divides the period); the groups send, with the output
  of a window ending at an epoch, the quota reports (an Arrow record batch, raysim.quota.reports)
  of each such VC that changed since its last one (the others' still hold); the operations go to
  the groups with the next window.
- `CohortEpochs` decides, inside a VC group, the cohorts all of whose VCs the group holds: the
  group stops its VCs at each epoch that follows a change and decides there, so the coordinator's
  windows may be as long as with quota=none.

Before every decision the reports are checked: loans are conserved per lender, borrower and pool
(nodes lent = nodes held + nodes given back and not yet taken back), and no VC holds more than its
borrow limit or has lent more than its lending limit.
"""

from __future__ import annotations

from raysim.quota.lending import ReportIndex, decide
from raysim.quota.settings import QuotaSettings


class LoanError(AssertionError):
    """The reports of an epoch break conservation or a limit (a bug, never a user error)."""


def epoch_operations(reports: dict[str, dict], settings: QuotaSettings, book: "LoanBook",
                     index: ReportIndex | None = None, changed=None) -> dict[str, list[tuple]]:
    """The operations at one epoch (`reports`: VC -> report, in layout order unless `index` is
    given), after `book` has checked the reports (`changed`: those that changed since its last
    check; None: any may have)."""
    book.check(reports, settings, changed)
    return decide(reports, settings, index)


def epoch_after(t: int, t0: int, period: int) -> int:
    """The first epoch (t0 + k * period) later than time t."""
    return t0 + ((t - t0) // period + 1) * period


class EpochExchange:
    """Epoch bookkeeping, in the coordinator, of the cohorts split over VC groups (`vcs`: their
    VCs, in layout order). Its state lives in the coordinator's RunState (`loans`), so that
    checkpoints and resumed runs carry it."""

    def __init__(self, settings: QuotaSettings, t0: int, window_s: int, vcs: list[str]):
        if settings.period_s % window_s:
            raise ValueError(f"quota.period_s ({settings.period_s} s) must be a multiple of the window "
                             f"({window_s} s)")
        self.settings, self.t0, self.window_s = settings, int(t0), int(window_s)
        self.period = settings.period_s
        self.vcs = list(vcs)
        self._members = frozenset(self.vcs)
        self._book = LoanBook()  # (a resumed run starts a new one: it checks every VC once)
        self.epochs = 0  # epochs decided in this process
        self.operations = 0  # operations sent

    @staticmethod
    def initial() -> dict:
        """The exchange's part of a fresh run's state."""
        return {"ops_at": None, "ops": {}, "due": None}

    def is_epoch(self, t: int) -> bool:
        return (t - self.t0) % self.period == 0

    def must_start_by(self, loans: dict) -> int | None:
        """The latest start of the next window that keeps the exchange exact: at the time of pending
        operations, or so that the window ends at a due epoch."""
        times = []
        if loans["ops_at"] is not None:
            times.append(loans["ops_at"])
        if loans["due"] is not None:
            times.append(loans["due"] - self.window_s)
        return min(times) if times else None

    def window_input(self, loans: dict, t_start: int, t_end: int, groups: list[list[str]]) -> list[dict | None]:
        """Per group, its quota input for the window [t_start, t_end): the operations of its VCs
        (pending operations act at t_start) and whether to report at t_end."""
        ops = loans["ops"] if loans["ops_at"] == t_start else {}
        if loans["ops_at"] is not None and loans["ops_at"] != t_start:
            raise AssertionError(f"loan operations due at t={loans['ops_at']} but the window starts at {t_start}")
        report = self.is_epoch(t_end)
        out = []
        for vcs in groups:
            mine = {vc: ops[vc] for vc in vcs if vc in ops}
            out.append({"t": t_start, "ops": mine, "report": report} if mine or report else None)
        loans["ops_at"], loans["ops"] = None, {}
        return out

    def after_window(self, loans: dict, t_end: int, status: dict, changed) -> None:
        """After the window ending at t_end: decide at an epoch (from the VCs' latest reports in
        `status`), else note that the next epoch is due when the window changed one of its VCs
        (`changed`: the VCs whose status the window sent)."""
        if not self.is_epoch(t_end):
            if loans["due"] is None and not self._members.isdisjoint(changed):
                loans["due"] = epoch_after(t_end, self.t0, self.period)
            return
        loans["due"] = None
        reports = {vc: status[vc]["quota"] for vc in self.vcs}
        ops = epoch_operations(reports, self.settings, self._book)
        for vc in self.vcs:
            if status[vc]["quota"]["returned"]:  # taken back now: not again at the next epoch
                status[vc]["quota"] = {**status[vc]["quota"], "returned": []}
        self.epochs += 1
        if ops:
            loans["ops_at"], loans["ops"] = t_end, ops
            self.operations += sum(len(o) for o in ops.values())


class CohortEpochs:
    """Loan decisions inside one VC group, for the cohorts all of whose VCs it holds (`vcs`, in
    layout order): the same checks and lending policy as EpochExchange, at the same epochs.

    The group asks `next_decision` where to stop its VCs next, runs them up to that epoch, tells
    `changed` which VCs processed events, and calls `decide`. A VC's report is made again only
    after it changed; the others' still hold (as in the coordinator). `due` is the epoch of a
    decision owed to events processed at the end of the group's last window."""

    def __init__(self, settings: QuotaSettings, t0: int, vcs: list[str]):
        self.settings, self.t0, self.period = settings, int(t0), settings.period_s
        self.vcs = list(vcs)
        self.due: int | None = None
        self._reports: dict = {}  # VC -> its latest report (raysim.quota.ledger.QuotaReport)
        self._dirty = set(self.vcs)  # VCs changed since their latest report
        self._book = LoanBook()
        self._index = ReportIndex(self.vcs, settings)

    def next_decision(self, earliest_event: float) -> int | None:
        """The next epoch to decide at, given the earliest unprocessed event of the VCs (None: none)."""
        if self.due is not None:
            return self.due
        return None if earliest_event == float("inf") else epoch_after(int(earliest_event), self.t0, self.period)

    def changed(self, vcs) -> None:
        """`vcs` processed events or carried out operations since the last decision."""
        self._dirty.update(vcs)

    def decide(self, sims: dict, t: int) -> dict[str, list[tuple]]:
        """The operations at epoch t, from the VCs' reports (`sims`: VC -> simulator, each with
        every event before t processed); the caller carries them out at t."""
        reports, index, changed = self._reports, self._index, self._dirty
        for vc in changed:
            reports[vc] = r = sims[vc].loans.report_at(t)
            index.update(vc, r)
        ops = epoch_operations(reports, self.settings, self._book, index, changed)
        # VCs with operations change; returns are taken back now, so their VCs report again
        self._dirty = set(ops).union(vc for vc in index.transit if reports[vc]["returned"])
        self.due = None
        return ops

    def __getstate__(self) -> dict:
        # reports hold their simulator: a restored group makes them again (same content: a report
        # is a function of the VC's state, and returns are cleared once decided) and checks them anew
        return {**self.__dict__, "_reports": {}, "_dirty": set(self.vcs), "_book": LoanBook(),
                "_index": ReportIndex(self.vcs, self.settings)}


class LoanBook:
    """Checks an epoch's reports for conservation and limits, going over only the VCs whose loans
    changed since the last check (their report's `loan_state`, or its returns taken back): the
    balance of every (lender, borrower, pool), held + returned - lent nodes, is kept as the sum of
    each VC's share of it, and must be zero wherever a changed VC moved it (elsewhere it is the
    balance already checked). A new book checks every VC."""

    def __init__(self):
        self._seen: dict = {}  # VC -> (loan state, returns?) of the report last checked
        self._share: dict = {}  # VC -> {(lender, borrower, pool): its rows' share of the balance}
        self._balance: dict = {}  # (lender, borrower, pool) -> balance (zero ones dropped)

    def check(self, reports: dict[str, dict], settings: QuotaSettings, changed=None) -> None:
        """Raise LoanError when the reports (VC -> report) break conservation or a VC's borrow or
        lending limit (`changed`: the VCs whose report may have changed since the last check;
        None: any)."""
        balance, touched, seen = self._balance, set(), self._seen
        for vc in reports if changed is None else changed:
            r = reports[vc]
            state = (r["loan_state"], bool(r["returned"]))
            if seen.get(vc) == state:
                continue
            seen[vc] = state
            old = self._share.pop(vc, {})
            new = _share(r) if r["lent_gpus"] or r["held_gpus"] or r["returned"] else {}
            for key in {key for key, _ in old.items() ^ new.items()}:  # the balances the VC moved
                balance[key] = balance.get(key, 0) + new.get(key, 0) - old.get(key, 0)
                touched.add(key)
            if new:
                self._share[vc] = new
                _check_limits(vc, r, settings)
        wrong = [key for key in touched if balance[key]]
        for key in touched:
            if not balance[key]:
                del balance[key]
        if wrong:
            wrong = {key: balance[key] for key in sorted(wrong)}
            raise LoanError(f"t={_time(reports)}: loans not conserved ((lender, borrower, pool): held + returned - "
                            f"lent): {wrong}")


def _share(r: dict) -> dict:
    """The VC's share of the loan balances: - lent, + held (open and draining), + returned."""
    share = dict(r["loans"])
    for row in r["returned"]:
        key = (row["lender"], r["vc"], row["pool"])
        share[key] = share.get(key, 0) + row["nodes"]
    return share


def _check_limits(vc: str, r: dict, settings: QuotaSettings) -> None:
    quota = settings.of(vc)
    if quota.borrow_limit is not None and r["held_gpus"] > quota.borrow_limit:
        raise LoanError(f"t={r['time']}: {vc} holds {r['held_gpus']} GPUs on loan, over its borrow_limit "
                        f"{quota.borrow_limit}")
    if quota.lending_limit is not None and r["lent_gpus"] > quota.lending_limit:
        raise LoanError(f"t={r['time']}: {vc} has lent {r['lent_gpus']} GPUs, over its lending_limit "
                        f"{quota.lending_limit}")


def _time(reports: dict) -> int:
    return max(r["time"] for r in reports.values())
