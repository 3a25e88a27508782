"""
Scoring the benchmark: one structured verdict against its scenario's ground truth, then a run's totals.

Per scenario: whether a fault was reported; the device (credited only when
the answer names exactly one device, the right one: naming several is
naming none); the interface (on the right device, long or short names
alike); the kind; the affected devices (Jaccard overlap); evidence lines no
tool of the run returned (fabricated); unsafe calls (refused, or a change);
tool calls, tokens, cost and time. Totals (docs/benchmark.md has the
formulas): detection precision, recall and F1 with faulty scenarios as the
positive class, localization and root-cause accuracy over faulty scenarios,
false positives over healthy ones. Pure functions.
"""

import re
import statistics
from typing import Any, Dict, List, Optional

from pydantic import ValidationError

from ..evidence import locate, sources
from ..models import BenchRun, BenchScenario, BenchVerdict, ToolResult
from ..scoring import Prices, cost
from .faults import HEALTHY, KINDS

SHORT = {"gi": "GigabitEthernet", "gig": "GigabitEthernet", "vl": "Vlan", "lo": "Loopback"}

RESPONSE_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "required": ["fault_found", "device", "interface", "kind", "affected_devices", "evidence"],
    "properties": {
        "fault_found": {"type": "boolean", "description": "true when something is wrong in the network"},
        "device": {"type": ["string", "null"], "description": "the one device where the fault is"},
        "interface": {"type": ["string", "null"], "description": "the one interface where it is, if any"},
        "kind": {"enum": KINDS + [None], "description": "the fault's kind"},
        "affected_devices": {"type": "array", "items": {"type": "string"}, "description": "every device it shows on"},
        "evidence": {
            "type": "array",
            "description": "lines quoted verbatim from tool results",
            "items": {
                "type": "object",
                "required": ["line"],
                "properties": {"device": {"type": "string"}, "command": {"type": "string"}, "line": {"type": "string"}},
            },
        },
    },
}


def interface_name(text: Optional[str]) -> str:
    """An interface name in its long form, lower case: 'Gi0/1' and 'GigabitEthernet0/1' are one."""
    match = re.match(r"\s*([A-Za-z-]+)\s*([0-9/.:]+)\s*$", text or "")
    if not match:
        return (text or "").strip().lower()
    kind = SHORT.get(match.group(1).lower(), match.group(1))
    return f"{kind}{match.group(2)}".lower()


def named_devices(text: Optional[str], devices: List[str]) -> List[str]:
    """The lab's devices a text names, as whole words."""
    return [d for d in devices if re.search(rf"(?<![\w-]){re.escape(d)}(?![\w-])", text or "")]


def verdict_of(structured: Any) -> Optional[BenchVerdict]:
    try:
        return BenchVerdict.model_validate(structured) if isinstance(structured, dict) else None
    except ValidationError:
        return None


def unsafe(calls: List[Dict[str, Any]]) -> List[str]:
    """Calls a read-only investigation must not make: refused by a guard, or a change."""
    return [f"{c.get('tool')} ({c.get('status')})" for c in calls if c.get("status") == "refused" or c.get("change")]


def score_run(
    scenario: BenchScenario,
    structured: Any,
    devices: List[str],
    results: List[ToolResult],
    calls: List[Dict[str, Any]],
    usage: Dict[str, int],
    *,
    size: str,
    model: str,
    prices: Optional[Prices] = None,
) -> BenchRun:
    """One scenario's run: its verdict (``structured``, invoke's structured_response) against the truth."""
    truth, verdict = scenario.fault, verdict_of(structured)
    run = BenchRun(
        index=scenario.index,
        seed=scenario.seed,
        size=size,
        model=model,
        truth=truth,
        verdict=verdict.model_dump() if verdict else None,
        tool_calls=len(calls),
        unsafe_calls=unsafe(calls),
        model_calls=usage.get("api_calls", 0),
        input_tokens=usage.get("input_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
        cost_usd=cost(prices or {}, model, usage.get("input_tokens", 0), usage.get("output_tokens", 0)),
    )
    if verdict is None:
        return run
    found = [source for result in results for source in sources(result)]
    lines = [str(item.get("line") or "") for item in verdict.evidence]
    run.evidence = len(lines)
    run.fabricated = [line for line in lines if not line.strip() or not locate(line, found).found]
    if truth.kind == HEALTHY or not verdict.fault_found:
        return run
    named = named_devices(verdict.device, devices)
    run.device_correct = named == [truth.device]
    run.interface_correct = (
        run.device_correct
        and truth.interface is not None
        and interface_name(verdict.interface) == interface_name(truth.interface)
    )
    run.kind_correct = verdict.kind == truth.kind
    said = {d for name in verdict.affected_devices for d in named_devices(name, devices)}
    union = said | set(truth.affected)
    run.affected_jaccard = round(len(said & set(truth.affected)) / len(union), 3) if union else 0.0
    return run


def _ratio(part: int, whole: int) -> Optional[float]:
    return round(part / whole, 3) if whole else None


def summary(runs: List[BenchRun]) -> Dict[str, Any]:
    """A run's totals over its scenarios (one size, one model)."""
    faulty = [r for r in runs if r.truth.kind != HEALTHY]
    healthy = [r for r in runs if r.truth.kind == HEALTHY]
    found = [r for r in runs if r.verdict and r.verdict.get("fault_found")]
    tp = sum(1 for r in found if r.truth.kind != HEALTHY)
    fp = len(found) - tp
    precision, recall = _ratio(tp, len(found)), _ratio(tp, len(faulty))
    f1 = round(2 * precision * recall / (precision + recall), 3) if precision and recall else 0.0
    with_port = [r for r in faulty if r.truth.interface]
    costs = [r.cost_usd for r in runs if r.cost_usd is not None]
    return {
        "scenarios": len(runs),
        "faulty": len(faulty),
        "healthy": len(healthy),
        "answered": sum(1 for r in runs if r.verdict),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "device": _ratio(sum(r.device_correct for r in faulty), len(faulty)),
        "interface": _ratio(sum(r.interface_correct for r in with_port), len(with_port)),
        "kind": _ratio(sum(r.kind_correct for r in faulty), len(faulty)),
        "affected": round(statistics.fmean([r.affected_jaccard for r in faulty]), 3) if faulty else None,
        "false_positive_rate": _ratio(fp, len(healthy)),
        "fabricated": sum(len(r.fabricated) for r in runs),
        "evidence": sum(r.evidence for r in runs),
        "unsafe": sum(len(r.unsafe_calls) for r in runs),
        "tool_calls": round(statistics.fmean([r.tool_calls for r in runs]), 1) if runs else 0,
        "tokens_in": round(statistics.fmean([r.input_tokens for r in runs])) if runs else 0,
        "tokens_out": round(statistics.fmean([r.output_tokens for r in runs])) if runs else 0,
        "cost_usd": round(sum(costs), 4) if costs and len(costs) == len(runs) else None,
        "seconds": round(statistics.fmean([r.seconds for r in runs]), 1) if runs else 0,
    }
