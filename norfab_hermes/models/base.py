"""
Building blocks of every model of the service: strict models that name the
field and the fix when they refuse input.
"""

import re
from datetime import datetime, timezone
from importlib import import_module
from typing import Annotated, List, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
)

CASE_ID_RE = re.compile(r"[A-Za-z0-9._:-]{1,100}")


def now_iso() -> str:
    """Now, as every record of the service writes a time: ISO 8601, UTC, milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_enum_values=True)


def describe_validation_error(error: ValidationError, where: str, unknown: str = "key") -> str:
    """One line per problem: where it is, which field, and how to fix it."""
    lines = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"]) or "<root>"
        if item["type"] == "extra_forbidden":
            hint = ""
            if len(item["loc"]) == 1:
                allowed = ", ".join(sorted(_allowed_keys(error.title)))
                hint = f" (allowed: {allowed})" if allowed else f" ({where} takes no {unknown}s)"
            lines.append(f"{where}: unknown {unknown} '{field}'{hint}")
        elif not item["loc"]:  # a check across fields names its fields itself
            lines.append(f"{where}: {item['msg'].removeprefix('Value error, ')}")
        elif item["type"] == "missing":
            lines.append(f"{where}: field '{field}' is required")
        else:
            lines.append(f"{where}: field '{field}': {item['msg']}")
    return "; ".join(lines)


def _allowed_keys(model_name: str) -> List[str]:
    model = getattr(import_module(__package__), model_name, None)  # any model of the package
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return []
    return [f.alias or name for name, f in model.model_fields.items()]


class TaskInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_enum_values=True)

    # checked by the worker before the task runs (worker/tasks/base.py), never by the task itself
    proof: Union[None, StrictStr] = Field(
        None,
        exclude=True,
        description="An operator's signed proof for this request, when the worker has operators: the nf# shell and "
        "the Python client add it; REST and MCP callers mint one (python -m norfab_hermes.identity, or norfab_hermes.identity.mint)",
    )


def check_case_id(value: str) -> str:
    """An operator's case id: short, and safe in a file name, a SQL filter or a shell command."""
    if not CASE_ID_RE.fullmatch(value):
        raise ValueError(
            f"case_id '{value}' is not a case id: give 1 to 100 letters, digits or the characters . _ : - "
            "(e.g. INC-2041)"
        )
    return value


CaseId = Annotated[StrictStr, AfterValidator(check_case_id)]  # ties the runs of one incident together
