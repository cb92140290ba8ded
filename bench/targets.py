"""A benchmark's targets, judged the same way by every bench: met or missed, printed, in the JSON, and the exit
status (1 on a miss), so a regression fails the run instead of scrolling past in a table.

    from bench.targets import Target, judge
    verdict = judge([Target("UI / extract median", ratio, 1.10, at_least=False, source="issue 12")])
    result["targets"], result["met"] = verdict["targets"], verdict["met"]
    return 0 if verdict["met"] else 1

A target names where it was stated (an issue's bar, the README), so a reader can tell a bar from a wish. A bench
states only targets someone set; a figure nobody set a bar for is reported, not judged.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Target:
    """One measured value against its limit: `value >= limit` when at_least, else `value <= limit`; strict makes
    it > or < (a bar that says "improves" is not met by a gain of 0)."""

    name: str
    value: float
    limit: float
    at_least: bool = True
    source: str = ""
    strict: bool = False

    @property
    def op(self) -> str:
        return (">" if self.at_least else "<") + ("" if self.strict else "=")

    @property
    def met(self) -> bool:
        """A value that is not a number (nothing was measured) misses: a bar is never met by default."""
        if math.isnan(self.value):
            return False
        if self.value == self.limit:
            return not self.strict
        return self.value > self.limit if self.at_least else self.value < self.limit

    def line(self) -> str:
        return (f"target {self.name}: {self.value:.4g} {self.op} {self.limit:.4g}"
                f"{f' ({self.source})' if self.source else ''}: {'met' if self.met else 'MISSED'}")

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": None if math.isnan(self.value) else self.value, "limit": self.limit,
                "op": self.op, "source": self.source, "met": self.met}


def judge(targets: list[Target], *, quiet: bool = False) -> dict[str, Any]:
    """Print one line per target and a last line saying whether all were met; return them for the JSON.

    An empty list is met (a run that measured nothing a bar applies to, e.g. one without the engine the bar
    compares with), and says so, so that a reader does not take it for a pass of the bar."""
    rows = [t.as_dict() for t in targets]
    met = all(t.met for t in targets)
    if not quiet:
        for t in targets:
            print(t.line())
        missed = sum(not t.met for t in targets)
        print("no target applies to this run" if not targets else
              f"targets: {len(targets) - missed} of {len(targets)} met" + ("" if met else f", {missed} MISSED"))
    return {"targets": rows, "met": met}
