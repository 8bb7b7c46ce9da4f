"""The comparison's output: one table (a row per system and figure, a ratio column against
streams_rt), the `ratio <measured> target <goal>` lines, and a PNG chart with the machine and the
versions."""

from __future__ import annotations

import os
import platform
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

BASELINE = "streams_rt"


@dataclass
class Figure:
    """One measured figure of one system; `higher_is_better` orients its ratio."""

    system: str
    name: str
    value: float
    unit: str
    higher_is_better: bool = True
    note: str = ""


@dataclass
class Results:
    figures: list[Figure] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)

    def add(self, figure: Figure) -> None:
        self.figures.append(figure)

    def value(self, system: str, name: str) -> float | None:
        return next((f.value for f in self.figures if f.system == system and f.name == name), None)

    def ratio(self, figure: Figure) -> float | None:
        """streams_rt's advantage: >1 means streams_rt is better on this figure."""
        ours = self.value(BASELINE, figure.name)
        if ours is None or not ours or not figure.value or ours != ours or figure.value != figure.value:
            return None
        return ours / figure.value if figure.higher_is_better else figure.value / ours


def machine() -> str:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        mem_kb = 0
    return f"{os.cpu_count()} cpus ({model}), {mem_kb / 1024 / 1024:.0f} GB, {platform.system()} {platform.release()}"


def table(results: Results) -> str:
    rows = [("system", "figure", "value", "streams_rt advantage")]
    for f in results.figures:
        ratio = results.ratio(f)
        value = f"{f.value:,.0f} {f.unit}" if f.value == f.value else "n/a"
        rows.append((f.system, f.name, value + (f" ({f.note})" if f.note else ""),
                     "-" if f.system == BASELINE else (f"{ratio:.2f}x" if ratio is not None else "n/a")))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def chart(results: Results, title: str, path: Path) -> None:
    """A bar chart per figure (one bar per system), the machine and versions underneath."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(f.name for f in results.figures))
    columns = min(3, len(names))
    rows = -(-len(names) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6 * columns, 4.5 * rows + 1), squeeze=False)
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    for ax, name in zip(axes.flat, names, strict=False):
        figures = [f for f in results.figures if f.name == name]
        labels = ["\n".join(textwrap.wrap(f.system, 16)) for f in figures]
        values = [f.value if f.value == f.value else 0.0 for f in figures]
        colors = ["tab:orange" if f.system == BASELINE else "tab:blue" for f in figures]
        bars = ax.bar(labels, values, color=colors)
        ax.bar_label(bars, labels=[f"{f.value:,.0f}" if f.value == f.value else "n/a" for f in figures], fontsize=8)
        ax.set_title(f"{name} ({figures[0].unit}, {'higher' if figures[0].higher_is_better else 'lower'} is better)")
        ax.tick_params(axis="x", labelsize=7)
    versions = "; ".join(f"{k} {v}" for k, v in results.versions.items())
    fig.suptitle(title)
    fig.text(0.01, 0.01, f"{machine()}\n{versions}", fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.06, 1, 0.96))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
