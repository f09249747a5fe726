"""Where the value axis of a bar chart that compares runs spans (one bar per run: the sweep page's
charts and the FGD sweep's PNG): from 0, except where the values lie close together, where an axis
from 0 would draw bars that look alike although they differ; never so close that a difference of a
few thousandths of a percent fills the chart. The rule, on the spread of the values (largest minus
smallest, as a share of the largest magnitude):

- under CLOSE (1 %): from 0, and the chart says how close the values are;
- from CLOSE to ZOOM (25 %), all values positive: the axis spans the values (not from 0; the chart
  says so and by how much at most the bars' heights exaggerate);
- otherwise: from 0.

Either way every bar ends inside the axis."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

#: Spread under which the values count as equal for the eye: drawn from 0, the chart saying how close
CLOSE = 0.01
#: Spread under which (from CLOSE on) the axis spans the values, not from 0
ZOOM = 0.25
#: Room beyond the longest bar on an axis from 0 (for a label over it), a share of its value
HEADROOM = 0.15
#: Room either side of the values on an axis not from 0, a share of their range
PAD = 0.3


@dataclass(frozen=True)
class BarAxis:
    """A value axis [low, high] for bars of `values` (see the module's rule)."""

    low: float
    high: float
    smallest: float  # of the values
    largest: float
    spread: float  # (largest - smallest) / the largest magnitude; 0 for equal values
    count: int  # finite values

    @property
    def from_zero(self) -> bool:
        return self.low <= 0.0 <= self.high

    def note(self, fmt: Callable[[float], str]) -> str:
        """What a caption says of the axis and the values (`fmt`: a value as the table shows it);
        empty where the bars speak for themselves (or there is one)."""
        values = f"{fmt(self.smallest)} to {fmt(self.largest)}"
        if self.count < 2:
            return ""
        if not self.from_zero:
            return (f"The axis does not start at 0: the bars' heights exaggerate differences of at most "
                    f"{percent(self.spread)} % of the largest value ({values}).")
        if self.spread == 0.0:
            return f"Every run has the same value ({fmt(self.largest)})."
        if self.spread < CLOSE:
            return f"The values lie within {percent(self.spread)} % of each other ({values}): bars from 0 look equal."
        return ""


def bar_axis(values) -> BarAxis | None:
    """The axis for bars of `values` (NaN: no bar), None where no value is finite."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not len(v):
        return None
    smallest, largest = float(v.min()), float(v.max())
    magnitude = max(abs(smallest), abs(largest))
    spread = (largest - smallest) / magnitude if magnitude > 0 else 0.0
    if smallest > 0 and CLOSE <= spread < ZOOM:
        pad = PAD * (largest - smallest)
        return BarAxis(smallest - pad, largest + pad, smallest, largest, spread, len(v))
    low, high = min(smallest, 0.0) * (1 + HEADROOM), max(largest, 0.0) * (1 + HEADROOM)
    return BarAxis(low, high if high > low else 1.0, smallest, largest, spread, len(v))


def percent(share: float) -> str:
    """`share` in percent to two significant digits, without an exponent (0.0026, 3.7)."""
    return np.format_float_positional(share * 100, precision=2, fractional=False, trim="-")
