"""
What answered a run, kept on its record so that its conclusion can be
reproduced: the model and provider the agent's profile names, the Hermes
Agent and norfab-hermes versions of the worker, and a digest of the agent's
definition with its tools as the worker resolved them (a tool's schema comes
from its service's task list, so the same definition can offer other tools).
"""

import functools
import hashlib
import importlib.metadata
import json
from typing import Any, Dict, Optional, Tuple

from ...models import AgentDefinition, Provenance

DIGEST_CHARS = 16


def definition_digest(definition: Dict[str, Any], tools: Dict[str, Dict[str, Any]]) -> str:
    """sha256 prefix of a definition (its model_dump) and its tools, as canonical JSON: key order does not count."""
    text = json.dumps({"definition": definition, "tools": tools}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


def tool_set(specs: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Each of an agent's tools as its model is offered it, and where its calls go."""
    return {name: {"schema": spec.schema, "target": list(spec.where())} for name, spec in specs.items()}


def model_settings(profile_model: Any, inventory_model: Dict[str, Any]) -> Tuple[Optional[str], Optional[str]]:
    """(model id, provider) of a profile's model section, else of the worker inventory's."""
    model = profile_model or inventory_model
    if isinstance(model, str):  # Hermes also takes a bare model id
        return model, None
    return model.get("default"), model.get("provider")


@functools.lru_cache(maxsize=None)
def version(package: str) -> Optional[str]:
    """An installed package's version (read once: an upgrade in place restarts the worker)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def of_agent(
    definition: AgentDefinition, specs: Dict[str, Any], config: Dict[str, Any], inventory_model: Dict[str, Any]
) -> Provenance:
    """The provenance of a run of an agent: its ``definition``, tool ``specs`` and profile ``config``."""
    model, provider = model_settings(config.get("model"), inventory_model)
    return Provenance(
        model=model,
        provider=provider,
        hermes_version=version("hermes-agent"),
        norfab_hermes_version=version("norfab-hermes"),
        definition_digest=definition_digest(definition.model_dump(mode="json"), tool_set(specs)),
    )
