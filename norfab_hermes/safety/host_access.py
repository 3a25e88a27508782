"""
What an agent definition may ask of the hermes worker's host, and why.

Any NorFab client can create an agent (``manage_agent``, NorFab's REST
service), so a definition is hostile input: it must not give a model a
shell, files, a browser or web fetches on the worker host, run commands
through native Hermes settings, or carry a secret into the profile files.

- Hermes tools: only those that act inside the agent's own profile are
  served to any agent; every other tool (terminal, files, code, browser,
  web, and whatever a newer Hermes adds) needs the worker inventory's
  ``host_tools`` grant for that agent by name. A closed list: an unknown
  tool is a host tool.
- Native Hermes settings: a definition's ``hermes`` section may set the
  model, the agent loop, memory and similar; settings that start processes
  or reach the host (hooks, quick commands, MCP servers, terminal, browser,
  inline shell in skills, ...) are refused.
- Secrets: a key-like field at any depth is refused; the definition names
  an environment variable of the worker instead (``*_env``).

Pure data and checks, imported by ``models`` and the worker's agent catalog.
"""

import re
from typing import Any, Dict, Iterable, Iterator, List

# Hermes tools that act only inside the agent's own profile or turn.
CONTAINED_TOOLS = {
    "todo": "the turn's own task list",
    "memory": "the profile's own memory files",
    "clarify": "a question to the run's operator",
    "skills_list": "the profile's own skills",
    "skill_view": "the profile's own skills",
    "skill_manage": "writes skill documents inside the profile (path traversal refused by Hermes)",
    "cronjob": "the profile's own schedules (scripts, workdirs and agent-less jobs are refused)",
    "delegate_task": "subagents with the same tools, in the same run and budgets",
}

# Top-level native Hermes settings a definition may set under ``hermes``.
HERMES_SETTINGS = {
    "model",
    "providers",
    "fallback_providers",
    "fallback_model",
    "agent",
    "compression",
    "prompt_caching",
    "auxiliary",
    "delegation",
    "memory",
    "skills",
    "display",
    "timezone",
    "tool_output",
    "tool_loop_guardrails",
    "context_file_max_chars",
    "file_read_max_chars",
    "goals",
    "openrouter",
    "bedrock",
    "vertex",
    "privacy",
    "personalities",
}
# Settings inside allowed sections that still reach the host.
REFUSED_SETTINGS = {
    "skills.inline_shell": "it runs shell snippets of skill files on the worker host",
    "skills.external_dirs": "it reads skills from any directory of the worker host",
    "memory.provider": "an external memory provider sends the agent's memory off the worker",
}

# Normalised (lowercase, no '-' or '_') field names, or their endings, that hold a secret.
SECRET_NAMES = (
    "apikey",
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "privatekey",
    "accesskey",
    "credential",
    "credentials",
)
SECRET_EXACT = {"key", "bearer", "auth", "authorization"}
NAME_SPLIT = re.compile(r"[-_.]")


def normal(name: str) -> str:
    return NAME_SPLIT.sub("", str(name)).lower()


def is_secret_name(name: Any) -> bool:
    """Whether a field named ``name`` holds a secret; ``*_env`` names a variable and does not."""
    key = normal(name)
    if key.endswith("env"):
        return False
    return key in SECRET_EXACT or key.endswith(SECRET_NAMES)


def secret_fields(value: Any, path: str = "") -> Iterator[str]:
    """Dotted paths of every key-like field at any depth of a JSON-like value."""
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            if is_secret_name(key) and item not in (None, ""):
                yield here
            else:
                yield from secret_fields(item, here)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from secret_fields(item, f"{path}[{index}]")


def refuse_secrets(value: Dict[str, Any], where: str) -> None:
    """Raise ValueError naming every key-like field and the fix."""
    found = list(secret_fields(value))
    if found:
        fields = ", ".join(f"'{where}.{field}'" for field in found)
        raise ValueError(
            f"{fields} would write a secret into the definition: name an environment variable of the worker "
            "instead (e.g. model.api_key_env: ENV_NAME, providers.NAME.key_env: ENV_NAME) and export it on the worker host"
        )


def refuse_host_settings(hermes: Dict[str, Any]) -> None:
    """Raise ValueError for native Hermes settings that reach the worker host."""
    unknown = sorted(key for key in hermes if key not in HERMES_SETTINGS)
    if unknown:
        raise ValueError(
            f"native Hermes setting(s) {', '.join(repr(k) for k in unknown)} cannot be set in an agent definition: "
            f"they configure the worker host or the gateway (allowed: {', '.join(sorted(HERMES_SETTINGS))}); "
            "a profile that needs them is made with Hermes on the worker host and served as a native profile"
        )
    for dotted, reason in REFUSED_SETTINGS.items():
        section, key = dotted.split(".")
        if isinstance(hermes.get(section), dict) and key in hermes[section]:
            raise ValueError(f"'hermes.{dotted}' cannot be set in an agent definition: {reason}")


def host_tools(offered: Iterable[str], own_tools: Iterable[str] = ()) -> List[str]:
    """The tools in ``offered`` that reach the worker host (NorFab tools of the agent excepted)."""
    own = set(own_tools)
    return sorted(tool for tool in offered if tool not in CONTAINED_TOOLS and tool not in own)
