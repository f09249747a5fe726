"""The coordinator's side of quota sharing: epochs, reports in, loan operations out.

Epochs are the times t0 + k * period_s. The coordinator's windows end at epochs (the window length
divides the period), so at an epoch every VC has processed every event before it. The VC groups
send, with the status of a window ending at an epoch, the quota report of every VC that changed
since its last one (the others' still hold); from all of them the lending policy
(raysim.elastic.lending) decides the operations, which go to the groups with the next window, and
act at the epoch itself, before its events. A window that changed something and does not end at
an epoch makes the next epoch due: windows then run up to it, so no decision is skipped; an epoch
without a change since the last decision would decide nothing, so it is skipped. Decisions thus
depend on the simulated state only: not on the runtime, the window length or how VCs are packed.

Every epoch, before deciding, the exchange checks the reports: loans are conserved per lender,
borrower and pool (nodes lent = nodes held + nodes given back and not yet taken back), and no VC
holds more than its borrow limit or has lent more than its lending limit.
"""

from __future__ import annotations

from raysim.elastic.lending import decide
from raysim.elastic.settings import SharingSettings


class LoanError(AssertionError):
    """The reports of an epoch break conservation or a limit (a bug, never a user error)."""


class EpochExchange:
    """Epoch bookkeeping of one run with `sharing=borrow`. Its state lives in the coordinator's
    RunState (`loans`), so that checkpoints and resumed runs carry it."""

    def __init__(self, settings: SharingSettings, t0: int, window_s: int):
        if settings.period_s % window_s:
            raise ValueError(f"sharing.period_s ({settings.period_s} s) must be a multiple of the window "
                             f"({window_s} s)")
        self.settings, self.t0, self.window_s = settings, int(t0), int(window_s)
        self.period = settings.period_s
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

    def after_window(self, loans: dict, t_end: int, status: dict, changed: bool) -> None:
        """After the window ending at t_end: decide at an epoch (from the VCs' latest reports in
        `status`), else note that the next epoch is due when the window `changed` anything."""
        if not self.is_epoch(t_end):
            if changed and loans["due"] is None:
                loans["due"] = t_end + self.period - (t_end - self.t0) % self.period
            return
        loans["due"] = None
        reports = {vc: s["quota"] for vc, s in status.items()}
        check_reports(reports, self.settings)
        ops = decide(reports, self.settings)
        for s in status.values():
            s["quota"] = {**s["quota"], "returned": []}  # taken back now: not again at the next epoch
        self.epochs += 1
        if ops:
            loans["ops_at"], loans["ops"] = t_end, ops
            self.operations += sum(len(o) for o in ops.values())


def check_reports(reports: dict[str, dict], settings: SharingSettings) -> None:
    """Conservation and limits over one epoch's reports (see the module docstring)."""
    balance: dict = {}
    for vc, r in reports.items():
        if not (r["lent_gpus"] or r["held_gpus"] or r["returned"]):
            continue  # takes no part in a loan
        for p in r["pools"]:
            for row in p["lent"]:
                key = (vc, row["vc"], p["pool"])
                balance[key] = balance.get(key, 0) - row["nodes"]
        for row in r["held"]:
            key = (row["lender"], vc, row["pool"])
            balance[key] = balance.get(key, 0) + row["nodes"] + row["draining"]
        for row in r["returned"]:
            key = (row["lender"], vc, row["pool"])
            balance[key] = balance.get(key, 0) + row["nodes"]
        quota = settings.quota(vc)
        if quota.borrow_limit is not None and r["held_gpus"] > quota.borrow_limit:
            raise LoanError(f"t={_time(reports)}: {vc} holds {r['held_gpus']} GPUs on loan, over its borrow_limit "
                            f"{quota.borrow_limit}")
        if quota.lending_limit is not None and r["lent_gpus"] > quota.lending_limit:
            raise LoanError(f"t={_time(reports)}: {vc} has lent {r['lent_gpus']} GPUs, over its lending_limit "
                            f"{quota.lending_limit}")
    wrong = {key: n for key, n in balance.items() if n}
    if wrong:
        raise LoanError(f"t={_time(reports)}: loans not conserved ((lender, borrower, pool): held + returned - lent): {wrong}")


def _time(reports: dict) -> int:
    return max(r["time"] for r in reports.values())
