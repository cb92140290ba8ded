"""What an import found: records written, and every bad record with its file and line number.

Importers never stop on a bad record; they note it here and go on. The CLI prints `summary()` at the
end so the user sees at once how much of their corpus made it and where to look for the rest.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Problem:
    file: str
    line: int                 # 1-based line in `file` (0 when the whole file is unreadable)
    message: str
    kind: str = "error"       # "error": record dropped; "weak": a value that could not be placed confidently


@dataclass
class ImportReport:
    format: str
    source: str
    records_seen: int = 0
    records_written: int = 0
    fields_placed: int = 0     # weak labels only: values aligned to OCR text with confidence
    fields_dropped: int = 0    # weak labels only: values left out (reported as "weak" problems)
    problems: list[Problem] = field(default_factory=list)

    def bad(self, file: str | Path, line: int, message: str) -> None:
        self.problems.append(Problem(str(file), int(line), message, "error"))

    def weak(self, file: str | Path, line: int, message: str) -> None:
        self.problems.append(Problem(str(file), int(line), message, "weak"))

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.kind == "error"]

    def summary(self, limit: int = 20) -> str:
        lines = [f"import {self.format} from {self.source}: {self.records_written} of "
                 f"{self.records_seen} records written, {len(self.errors)} bad"]
        if self.fields_placed or self.fields_dropped:
            lines.append(f"weak labels: {self.fields_placed} field values aligned to OCR text, "
                         f"{self.fields_dropped} left out as not confident")
        for p in self.problems[:limit]:
            lines.append(f"  {p.file}:{p.line}: [{p.kind}] {p.message}")
        if len(self.problems) > limit:
            lines.append(f"  ... {len(self.problems) - limit} more in import_report.json")
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, indent=1)
