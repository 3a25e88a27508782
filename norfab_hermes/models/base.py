"""
Building blocks of every model of the service: strict models that name the
field and the fix when they refuse input.
"""

from importlib import import_module
from typing import List

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
)


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
