"""
Every budget of one run, counted and checked in one place: wall clock, model
requests (the agent's, its subagents' and Hermes' auxiliary ones), tokens,
the agent's daily tokens and cost, NorFab tool calls, the same call
repeated, devices reached, and changes made.

A check answers with the stop reason and message of the budget it breaks,
or None; the run stops on the first one (``Run``). Tokens are counted as the
provider reports them, per answer; a request that would take a run or its
agent past a token or cost budget (by Hermes' estimate of its prompt) is not
sent. Spending 50, 75 and 90 % of a budget is a warning, once.
"""

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional, Protocol, Set, Tuple

from ...models import AgentBudget, AgentDefinition, HermesInventory, ModelPrice, StopReason

Overrun = Optional[Tuple[StopReason, str]]
JOB_TIMEOUT_MARGIN = 3.0  # seconds between the end of a run budget and the NorFab job timeout
WARN_AT = (50, 75, 90)  # percent of a token or cost budget at which a warning is given


def crossed(before: float, after: float, limit: Optional[float]) -> Optional[int]:
    """The highest warning level (percent) spending from ``before`` to ``after`` of ``limit`` passed, or None."""
    if not limit:
        return None
    passed = [level for level in WARN_AT if before < limit * level / 100 <= after]
    return max(passed) if passed else None


def cost_of(prices: Dict[str, ModelPrice], model: Optional[str], prompt: int, completion: int) -> Optional[float]:
    """USD of one request by the agent's prices; None when its model has no price."""
    price = prices.get(model or "")
    return None if price is None else (prompt * price.input + completion * price.output) / 1e6


def today() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


@dataclass(frozen=True)
class DailyLimits:
    """What all runs of one agent may spend per day (UTC)."""

    tokens: Optional[int]
    cost_usd: Optional[float]
    prices: Dict[str, ModelPrice] = field(default_factory=dict)

    @classmethod
    def of(cls, definition: AgentDefinition) -> Optional["DailyLimits"]:
        if definition.daily_tokens is None and definition.daily_cost_usd is None:
            return None
        return cls(definition.daily_tokens, definition.daily_cost_usd, dict(definition.prices))


class Ledger(Protocol):
    """Where the daily usage is kept (the run records)."""

    def spent(self, agent: str, day: str) -> Tuple[int, float]: ...

    def add_usage(self, agent: str, day: str, tokens: int, cost: float) -> Tuple[int, float]: ...


# told(kind, agent, text, day): what an operator must hear of an agent's daily budget (the notifier)
Told = Callable[[str, str, str, str], None]


class DailyUsage:
    """What each agent's runs spent today, shared by all runs of the worker, kept in ``ledger``."""

    def __init__(self, ledger: Ledger, told: Optional[Told] = None) -> None:
        self.ledger = ledger
        self.told = told  # told(kind, agent, text, day): budget_warning at 90 %, over_budget when the day is over
        self._warned: Dict[Tuple[str, str], int] = {}  # (agent, day) -> highest warning level given
        # (agent, day) -> the limits a request was refused under: the agent's day is over until they change
        self._refused: Dict[Tuple[str, str], Tuple[DailyLimits, str]] = {}
        self._lock = threading.Lock()

    def refusal(
        self, agent: str, limits: Optional[DailyLimits], model: Optional[str] = None, expected: int = 0
    ) -> Optional[str]:
        """Why no (further) request of the agent may be sent today, or None.

        A request refused for the budget ends the agent's day: what is left
        would not hold the next one either, so runs are refused from then on.
        """
        if limits is None:
            return None
        day = today()
        refused = self._refused.get((agent, day))
        if refused is not None and refused[0] == limits:
            return refused[1]
        reason = self._refusal(agent, day, limits, model, expected)
        if reason is not None:
            self._refused[(agent, day)] = (limits, reason)
            if self.told is not None:
                self.told("over_budget", agent, reason, day)
        return reason

    def _refusal(self, agent: str, day: str, limits: DailyLimits, model: Optional[str], expected: int) -> Optional[str]:
        tokens, cost = self.ledger.spent(agent, day)
        if limits.tokens is not None and (tokens >= limits.tokens or tokens + expected > limits.tokens):
            return f"agent '{agent}' spent {tokens} of its {limits.tokens} daily tokens" + (
                f" and the next request needs about {expected}" if expected and tokens < limits.tokens else ""
            )
        if limits.cost_usd is None:
            return None
        if model is not None and model not in limits.prices:
            return f"model '{model}' has no price in the prices of agent '{agent}', so its daily cost cannot be held"
        more = cost_of(limits.prices, model, expected, 0) or 0.0
        if cost >= limits.cost_usd or cost + more > limits.cost_usd:
            return f"agent '{agent}' spent {cost:.4f} of its {limits.cost_usd} USD daily budget"
        return None

    def add(self, agent: str, limits: DailyLimits, model: Optional[str], prompt: int, completion: int) -> Optional[str]:
        """Count one answer's tokens and cost; the warning when it passed 50, 75 or 90 % of a budget."""
        day, price = today(), cost_of(limits.prices, model, prompt, completion) or 0.0
        with self._lock:
            tokens, cost = self.ledger.add_usage(agent, day, prompt + completion, price)
            level = max(
                crossed(tokens - prompt - completion, tokens, limits.tokens) or 0,
                crossed(cost - price, cost, limits.cost_usd) or 0,
            )
            if level <= self._warned.get((agent, day), 0):
                return None
            self._warned[(agent, day)] = level
        warning = f"agent '{agent}' spent {level} % of its daily budget: {self._spent_text(tokens, cost, limits)}"
        if level >= WARN_AT[-1] and self.told is not None:
            self.told("budget_warning", agent, warning, day)
        return warning

    def status(self, agent: str, limits: DailyLimits) -> AgentBudget:
        day = today()
        tokens, cost = self.ledger.spent(agent, day)
        percent = max(
            100 * tokens / limits.tokens if limits.tokens else 0.0,
            100 * cost / limits.cost_usd if limits.cost_usd else 0.0,
        )
        level = max((level for level in WARN_AT if percent >= level), default=None)
        return AgentBudget(
            day=day,
            tokens=tokens,
            cost_usd=round(cost, 6),
            daily_tokens=limits.tokens,
            daily_cost_usd=limits.cost_usd,
            percent=round(percent, 1),
            warning=f"{level} % of the daily budget spent: {self._spent_text(tokens, cost, limits)}" if level else None,
        )

    def budgets(self, definitions: Dict[str, AgentDefinition], agent: Optional[str] = None) -> Dict[str, AgentBudget]:
        """Today's spend of every agent with a daily budget (or of ``agent``)."""
        found = {}
        for name, definition in definitions.items():
            limits = DailyLimits.of(definition)
            if limits is not None and agent in (None, name):
                found[name] = self.status(name, limits)
        return found

    @staticmethod
    def _spent_text(tokens: int, cost: float, limits: DailyLimits) -> str:
        parts = [f"{tokens} of {limits.tokens} tokens"] if limits.tokens else [f"{tokens} tokens"]
        if limits.cost_usd:
            parts.append(f"{cost:.4f} of {limits.cost_usd} USD")
        return ", ".join(parts)


@dataclass(frozen=True)
class Limits:
    """What one run may spend."""

    seconds: float
    max_turns: int  # model requests
    max_calls: int = 30  # NorFab tool calls
    max_targets: int = 20  # distinct devices reached through nornir tools
    max_repeats: int = 3  # the same call with the same arguments
    max_changes: int = 5  # changes sent to devices (changes.max_per_run)
    max_tokens: Optional[int] = None  # prompt + completion, as the provider reports them
    daily: Optional[DailyLimits] = None  # the agent's, shared with its other runs

    @classmethod
    def of(
        cls, definition: AgentDefinition, inventory: HermesInventory, max_turns: int, timeout: Optional[float], job: Any
    ) -> "Limits":
        """An agent's limits for one run; a caller may ask for less time, never more, and the run
        ends before the caller's NorFab job stops waiting."""
        seconds = min(timeout or definition.run_timeout, definition.run_timeout)
        job_timeout = getattr(job, "timeout", None)
        if job_timeout:
            seconds = min(seconds, max(1.0, job_timeout - JOB_TIMEOUT_MARGIN))
        return cls(
            seconds=seconds,
            max_turns=max_turns,
            max_calls=definition.max_tool_calls or inventory.max_tool_calls,
            max_targets=definition.max_targets or inventory.max_targets,
            max_repeats=inventory.max_repeated_calls,
            max_changes=definition.changes.max_per_run,
            max_tokens=definition.max_tokens or inventory.max_tokens,
            daily=DailyLimits.of(definition),
        )


class Budget:
    """What one run of ``agent`` has spent of its limits; ``daily``: what the agent spent today."""

    def __init__(self, limits: Limits, agent: str = "", daily: Optional[DailyUsage] = None) -> None:
        self.limits = limits
        self.agent = agent
        self.daily = daily if limits.daily is not None else None
        self.started = time.time()
        self.deadline = self.started + limits.seconds
        self.model_requests = 0
        self.tokens = 0
        self._next: Tuple[Optional[str], int] = (None, 0)  # the request about to be sent: model, prompt estimate
        self._warned = 0  # highest warning level of max_tokens given
        self.targets: Set[str] = set()
        self.changes = 0  # changes sent
        self._calls: Counter[Tuple[str, str]] = Counter()  # (tool, arguments digest) -> times called
        self._lock = threading.Lock()

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.time())

    def clock(self) -> Overrun:
        if time.time() > self.deadline:
            return StopReason.run_timeout, f"run budget of {self.limits.seconds:.0f}s spent"
        return None

    def expect(self, model: Optional[str], prompt_tokens: int) -> None:
        """The next model request's model and prompt size, as Hermes estimates it before sending."""
        self._next = (model, max(0, int(prompt_tokens or 0)))

    def model_request(self) -> Overrun:
        """Count one model request; the overrun when the run has none left, or it would pass a token
        or cost budget."""
        model, expected = self._next
        self._next = (None, 0)  # an auxiliary request (title, compression) has no estimate of its own
        limit = self.limits.max_tokens
        if limit is not None and self.tokens + expected > limit:
            return StopReason.token_budget, (
                f"token budget of {limit} spent: {self.tokens} used"
                + (f", the next request needs about {expected}" if expected and self.tokens < limit else "")
            )
        refusal = self.daily.refusal(self.agent, self.limits.daily, model, expected) if self.daily else None
        if refusal:
            return StopReason.daily_budget, f"daily budget spent: {refusal}"
        with self._lock:
            if self.model_requests >= self.limits.max_turns:
                return StopReason.max_turns, f"model call budget of {self.limits.max_turns} spent"
            self.model_requests += 1
        return None

    def model_usage(self, model: Optional[str], prompt: int, completion: int) -> List[str]:
        """Count one answer's tokens (and the agent's daily cost); warnings at 50, 75 and 90 % of a budget."""
        warnings = []
        with self._lock:
            before, self.tokens = self.tokens, self.tokens + prompt + completion
            level = crossed(before, self.tokens, self.limits.max_tokens)
            if level and level > self._warned:
                self._warned = level
                warnings.append(f"{level} % of the run's token budget spent: {self.tokens} of {self.limits.max_tokens}")
        if self.daily is not None and self.limits.daily is not None:
            warning = self.daily.add(self.agent, self.limits.daily, model, prompt, completion)
            warnings += [warning] if warning else []
        return warnings

    def tool_call(self, tool: str, digest: str) -> Overrun:
        """Count one NorFab tool call; the overrun when it must not be made."""
        with self._lock:
            self._calls[(tool, digest)] += 1
            repeats, calls = self._calls[(tool, digest)], sum(self._calls.values())
        if repeats >= self.limits.max_repeats:
            return (
                StopReason.repeated_call,
                f"{tool} was called {repeats} times with the same arguments; the run stops instead of looping",
            )
        if calls > self.limits.max_calls:
            return StopReason.tool_budget, f"the run's budget of {self.limits.max_calls} tool calls is spent"
        return None

    def reached(self, devices: Set[str]) -> Overrun:
        """Devices a tool call reached; the overrun past the run's budget of devices."""
        with self._lock:
            self.targets |= devices
            touched = len(self.targets)
        if touched > self.limits.max_targets:
            return (
                StopReason.tool_budget,
                f"the run touched {touched} devices, over its budget of {self.limits.max_targets}",
            )
        return None

    def reserve_change(self) -> Optional[str]:
        """Hold one of the run's changes for a change call; why not when its budget is spent.

        A spent change budget refuses the change, not the run: the agent can
        still read devices and report. A change that is not sent after all
        gives its place back (``release_change``).
        """
        with self._lock:
            if self.changes >= self.limits.max_changes:
                return f"the run has made its {self.limits.max_changes} change(s) (changes.max_per_run)"
            self.changes += 1
        return None

    def release_change(self) -> None:
        with self._lock:
            self.changes -= 1
