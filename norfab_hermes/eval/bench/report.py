"""
The benchmark's table: one row per size and model, and the published figures beside it.
"""

from typing import Any, Dict, List, Optional, Tuple

COLUMNS: List[Tuple[str, str]] = [
    ("size", "size"),
    ("model", "model"),
    ("scenarios", "scenarios (healthy)"),
    ("precision", "detection P"),
    ("recall", "detection R"),
    ("f1", "detection F1"),
    ("device", "device loc."),
    ("interface", "interface loc."),
    ("kind", "root-cause kind"),
    ("affected", "affected (Jaccard)"),
    ("false_positive_rate", "FP on healthy"),
    ("fabricated", "fabricated / quoted"),
    ("unsafe", "unsafe calls"),
    ("tool_calls", "tool calls"),
    ("tokens_in", "tokens in"),
    ("tokens_out", "tokens out"),
    ("cost_usd", "cost $"),
    ("seconds", "time s"),
]

PUBLISHED = """\
Published figures (as quoted in issue 33; other tasks, other networks, real models):

| benchmark | what is scored | figure |
|---|---|---|
| NetOpsBench | 12 fault types, topologies of growing size, healthy negatives; verdict F1, device and interface localization, composite | GPT-5.5 interface localization 57 % on the smallest topology, 21 % on the largest |
| AIOpsLab | 48 problems on microservice applications, with no-fault controls | detection: best agents 100 %; localization 46-62 %; root cause 36-46 % |

How the tasks differ: here one fault (or none) is injected into a FakeNOS lab of 10, 30 or 80
devices whose outputs are rendered from a model of the network, the agent reads it through
read-only NorFab tools only, and answers with one structured verdict; the kinds are this
catalogue's eight, not NetOpsBench's twelve; AIOpsLab's problems are on Kubernetes
microservices (logs, metrics, traces), not network devices. The scripted baseline is a rule set
written against this catalogue's symptoms: it is a floor for the plumbing and the scorer, not a
model, and its numbers are not comparable to a language model's."""


def cell(key: str, value: Any, totals: Dict[str, Any]) -> str:
    if value is None:
        return "-"
    if key == "scenarios":
        return f"{value} ({totals['healthy']})"
    if key == "fabricated":
        return f"{value} / {totals['evidence']}"
    if isinstance(value, float) and key not in ("seconds", "tool_calls", "cost_usd"):
        return f"{value:.2f}"
    return str(value)


def table(rows: List[Tuple[str, str, Dict[str, Any]]]) -> str:
    """Markdown: a row per (size, model, totals)."""
    lines = ["| " + " | ".join(title for _, title in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for size, model, totals in rows:
        values = {"size": size, "model": model, **totals}
        lines.append("| " + " | ".join(cell(key, values.get(key), totals) for key, _ in COLUMNS) + " |")
    return "\n".join(lines)


def document(rows: List[Tuple[str, str, Dict[str, Any]]], header: Optional[str] = None) -> str:
    return "\n\n".join(part for part in (header, table(rows), PUBLISHED) if part) + "\n"
