"""
Structured answers: a run asked for an answer matching a JSON schema.

The schema goes to the model with the instructions; the final answer is
parsed (the whole text, or its first fenced code block) and validated. An
answer that does not match gets one corrective turn in the same session,
within the same run budget; the result then carries ``structured_response``,
or ``structured_error`` saying why there is none.
"""

import json
import re
from typing import Any, Callable, Dict, Optional, Tuple

import jsonschema

from ...models import InvokeResultData, RunUsage, StopReason

FENCED = re.compile(r"```(?:json)?\s*\n(.*?)\n\s*```", re.S | re.I)
ASK = "[Answer format: reply with one JSON document matching this JSON schema, and nothing else: {schema}]"
RETRY = (
    "Your answer did not match the JSON schema: {error}.\n"
    "Answer again with only the JSON document, matching the schema given with the request."
)


def ask(instructions: str, schema: Optional[Dict[str, Any]]) -> str:
    """The instructions with the answer format in front (the request stays the last line)."""
    if schema is None:
        return instructions
    return ASK.format(schema=json.dumps(schema, sort_keys=True)) + "\n" + instructions


def check(text: str, schema: Dict[str, Any]) -> Tuple[Any, Optional[str]]:
    """(the parsed answer, None) when it matches ``schema``; (None, why not) otherwise."""
    candidates = [text.strip()] + [m.group(1) for m in FENCED.finditer(text)]
    value, parsed = None, False
    for candidate in candidates:
        try:
            value, parsed = json.loads(candidate), True
            break
        except ValueError:
            continue
    if not parsed:
        return None, "the answer is not JSON (nor does it hold a fenced JSON block)"
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the document"
        return None, f"{where}: {error.message}"
    return value, None


def _usage(first: RunUsage, second: RunUsage) -> RunUsage:
    priced = [usage.cost_usd for usage in (first, second) if usage.cost_usd is not None]
    return RunUsage(
        api_calls=second.api_calls,  # metered per run: the second count includes the first
        input_tokens=first.input_tokens + second.input_tokens,
        output_tokens=first.output_tokens + second.output_tokens,
        total_tokens=first.total_tokens + second.total_tokens,
        cost_usd=sum(priced) if len(priced) == 2 else None,
    )


def settle(run: Any, result: InvokeResultData, retry: Callable[[str], InvokeResultData]) -> InvokeResultData:
    """The run's result with its structured answer; one corrective turn when the first does not match."""
    schema = run.response_schema
    if schema is None:
        return result
    if result.stop_reason != StopReason.completed.value:
        return result.model_copy(update={"structured_error": f"the run ended ({result.stop_reason}) before an answer"})
    value, error = check(result.response, schema)
    if error is None:
        return result.model_copy(update={"structured_response": value})
    if run.remaining() <= 0:
        return result.model_copy(update={"structured_error": f"{error}; no time left for a corrective turn"})
    run.event(
        f"run {run.run_id} answer does not match its response schema ({error}); asking once more", severity="WARNING"
    )
    run.stop_reason, run.stop_message = None, ""  # the first turn completed; the run goes on for one more
    second = retry(RETRY.format(error=error))
    update: Dict[str, Any] = {"usage": _usage(result.usage, second.usage)}
    if second.stop_reason != StopReason.completed.value:
        update["structured_error"] = f"{error}; the corrective turn ended ({second.stop_reason})"
        return second.model_copy(update=update)
    value, again = check(second.response, schema)
    if again is None:
        update["structured_response"] = value
    else:
        update["structured_error"] = f"the answer did not match the response schema after one corrective turn: {again}"
    return second.model_copy(update=update)
