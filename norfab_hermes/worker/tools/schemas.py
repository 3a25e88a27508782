"""
The schema a model sees of a NorFab tool: an explicit schema closed to extras, or the task's input
schema minus fixed, injected and guarded arguments; the commands the tool may send a device.
"""

import difflib
import json
from typing import Any, Dict, List, Optional, Tuple

import jsonschema

from ...safety import commands, guards

# arguments NorFab injects into every task; never the model's to set
INJECTED_ARGUMENTS = {"job", "progress"}


def allowed_commands(patterns: Optional[List[str]]) -> Tuple[List[Any], str]:
    """The commands a tool may send to a device, and how to say so; read-only forms unless the definition says."""
    compiled = commands.compile_commands(patterns or list(commands.READ_ONLY_COMMANDS))
    return compiled, f"commands matching {'; '.join(patterns)}" if patterns else commands.READ_ONLY_SUMMARY


def closed(schema: Dict[str, Any]) -> Dict[str, Any]:
    """An explicit schema, closed to extra arguments unless it opens itself explicitly."""
    return schema if "additionalProperties" in schema else {**schema, "additionalProperties": False}


def is_open(schema: Dict[str, Any]) -> bool:
    return schema.get("additionalProperties") not in (None, False)


def derive_parameters(input_schema: Dict[str, Any], fixed: Dict[str, Any]) -> Dict[str, Any]:
    """The task's input schema minus fixed, injected and guarded arguments, closed to extras."""
    schema: Dict[str, Any] = _strip_presence(json.loads(json.dumps(input_schema)))
    hidden = INJECTED_ARGUMENTS | set(fixed)
    properties = {
        k: v for k, v in (schema.get("properties") or {}).items() if k not in hidden and not guards.guarded_argument(k)
    }
    schema.update(
        type="object",
        properties=properties,
        required=[r for r in schema.get("required") or [] if r in properties],
        additionalProperties=False,
    )
    if not schema["required"]:
        del schema["required"]
    return schema


def _strip_presence(value: Any) -> Any:
    # "presence" is PICLE's shell flag, not JSON schema
    if isinstance(value, dict):
        return {k: _strip_presence(v) for k, v in value.items() if k != "presence"}
    if isinstance(value, list):
        return [_strip_presence(v) for v in value]
    return value


def task_arguments_problem(schema: Dict[str, Any], kwargs: Dict[str, Any], complete: bool) -> Optional[str]:
    """What is wrong with ``kwargs`` for a task with input ``schema`` (names compared with '-' and '_'
    alike), or None. A name the schema does not list is refused when the schema is closed or when it is
    a near miss of one it lists (a typo); ``complete`` arguments must hold the required ones too."""
    properties = {guards.normal(name): name for name in schema.get("properties") or {}}
    named: Dict[str, Any] = {}
    for name, value in kwargs.items():
        listed = properties.get(guards.normal(name))
        if listed is None:
            near = difflib.get_close_matches(guards.normal(name), list(properties), n=1, cutoff=0.8)
            if near or schema.get("additionalProperties") is False:
                hint = f"; did you mean {properties[near[0]]}?" if near else ""
                return f"'{name}' is not an argument of the task{hint}"
            continue
        named[listed] = value
    required = [name for name in schema.get("required") or [] if name not in INJECTED_ARGUMENTS]
    checked = {**schema, "additionalProperties": True, "required": required if complete else []}
    try:
        jsonschema.validate(named, checked)
    except jsonschema.ValidationError as error:
        path = ".".join(str(p) for p in error.absolute_path) or "arguments"
        return f"{path}: {error.message}"
    except jsonschema.SchemaError:
        return None  # a schema jsonschema cannot read checks nothing; the task validates its own input
    return None
