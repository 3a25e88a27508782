"""
What an agent remembers, for its operator: the memory entries and skills
Hermes keeps in the agent's own profile, listed with secrets masked and
cleared entry by entry, skill by skill, or all at once. Hermes owns the
memory and skills themselves; nothing here keeps a second copy.
"""

from pathlib import Path
from typing import Callable, List, Optional

from ...errors import InvalidRequest
from ...models import AgentDefinition, MemoryResultData, SkillInfo
from ...safety.redact import scrub
from ..hermes import memory


class AgentMemory:
    """
    The memory task's actions on one worker's agents.

    Args:
        worker_name: for results and messages.
        home: the profile home of an agent.
        secrets: values to mask (provider keys).
    """

    def __init__(self, worker_name: str, home: Callable[[str], Path], secrets: Callable[[], List[str]]) -> None:
        self.worker_name = worker_name
        self.home = home
        self.secrets = secrets

    def act(
        self, agent: str, definition: AgentDefinition, action: str, target: Optional[str], entry: Optional[str]
    ) -> MemoryResultData:
        message = ""
        if action == "clear":
            message = self.clear(agent, target, entry)
        notes, user = memory.entries(self.home(agent))
        secrets = self.secrets()
        return MemoryResultData(
            agent=agent,
            worker=self.worker_name,
            memory_on=definition.memory,
            skills_on=definition.skills,
            memory=[scrub(e, secrets) for e in notes],
            user=[scrub(e, secrets) for e in user],
            skills=[
                SkillInfo(
                    name=s["name"],
                    description=scrub(str(s.get("description") or ""), secrets),
                    category=s.get("category"),
                )
                for s in memory.skills(self.home(agent))
            ],
            message=message or "listed",
        )

    def clear(self, agent: str, target: Optional[str], entry: Optional[str]) -> str:
        if target is None:
            raise InvalidRequest("target: clear needs memory, user or skills (and entry for just one)")
        home = self.home(agent)
        try:
            if target == "skills":
                names = [entry] if entry else [s["name"] for s in memory.skills(home)]
                for name in names:
                    memory.delete_skill(home, name)
                return f"{len(names)} skill(s) of agent '{agent}' deleted"
            removed = memory.forget(home, target, entry)
        except LookupError as error:
            raise InvalidRequest(f"entry: {error}") from None
        return f"{len(removed)} {target} entr{'y' if len(removed) == 1 else 'ies'} of agent '{agent}' forgotten"
