"""Gantt chart of a simulated or measured timeline (matplotlib, Agg backend, PNG)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from training.pipeline.simulate import Timeline  # noqa: E402

COLOURS = {"F": "#4C72B0", "B": "#DD8452", "W": "#55A868", "SEND_F": "#8C8C8C", "RECV_F": "#BBBBBB",
           "SEND_B": "#8C8C8C", "RECV_B": "#BBBBBB", "REDUCE_GRAD": "#8172B3", "OPTIMIZER_STEP": "#C44E52"}


def draw_gantt(timeline: Timeline, path: str | Path, title: str = "") -> Path:
    """One row per stage; F/B/W coloured with micro-batch numbers, comm grey, the data-parallel
    REDUCE_GRAD purple and OPTIMIZER_STEP red, idle left white."""
    S = timeline.num_stages
    fig, ax = plt.subplots(figsize=(12, 0.6 * S + 1.4))
    T = timeline.makespan or 1.0
    for s in timeline.spans:
        w = s.end - s.start
        ax.barh(S - 1 - s.stage, w, left=s.start, height=0.8, color=COLOURS.get(s.kind, "k"),
                edgecolor="white" if s.kind in ("F", "B", "W") else "none", linewidth=0.4)
        if s.kind in ("F", "B", "W") and w > T / 80:
            ax.text(s.start + w / 2, S - 1 - s.stage, str(s.mb), ha="center", va="center", fontsize=7, color="white")
    ax.set_yticks(range(S))
    ax.set_yticklabels([f"stage {S - 1 - i}" for i in range(S)])
    unit = "s" if timeline.source == "measured" else "cost units"
    ax.set_xlabel(f"time ({unit}); white = idle")
    ax.set_title(title or f"{timeline.source} timeline: bubble {timeline.bubble:.1%}, makespan {T:.3g}")
    ax.legend(handles=[Patch(color=COLOURS[k], label=k) for k in ("F", "B", "W")] +
              [Patch(color="#8C8C8C", label="send"), Patch(color="#BBBBBB", label="recv"),
               Patch(color=COLOURS["REDUCE_GRAD"], label="reduce"),
               Patch(color=COLOURS["OPTIMIZER_STEP"], label="step")],
              loc="upper right", fontsize=7, ncol=7)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
