"""
The evidence store: every tool result a run receives, kept as an artifact
under the worker's instance root, ``<root>/evidence/<agent>/``: the text in
``<artifact id>.txt`` (redacted as the model saw it, but never cut) and one
line per artifact in ``index.jsonl`` (run, session, case, tool, NorFab job,
worker, device, command, time, sha256). An auditor can check any artifact
against its digest; an operator reads it back whole even when the model was
shown a cut version. Artifacts older than the retention are deleted.
"""

import logging
import re
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional

from ...errors import InvalidRequest, UnknownArtifact
from ...models import ARTIFACT_ID, Artifact, ArtifactSummary, EvidenceResultData, now_iso
from ..files import write_file
from .capture import Piece, digest

log = logging.getLogger(__name__)

INDEX = "index.jsonl"
PRUNE_EVERY = 3600.0  # seconds between retention checks while the worker runs


class EvidenceStore:
    """
    Artifacts of one worker's runs, by agent.

    Args:
        root: the instance root.
        retention_days: how long artifacts are kept.
        session_of: the session of a run (known once the gateway took its message).
    """

    def __init__(self, root: Path, retention_days: int, session_of: Callable[[Any], Optional[str]]) -> None:
        self.folder = Path(root) / "evidence"
        self.session_of = session_of
        self.retention = timedelta(days=retention_days)
        self._lock = threading.Lock()
        self._pruned = 0.0

    def _dir(self, agent: str) -> Path:
        return self.folder / agent

    def keep_run(
        self,
        run: Any,
        tool: str,
        task: str,
        job_uuid: Optional[str],
        pieces: Iterable[Piece],
        approved_by: Optional[str] = None,
    ) -> List[ArtifactSummary]:
        """Keep a tool call's results under its run's agent, run, session and case."""
        session_id = self.session_of(run)
        return self.keep(run.agent, run.run_id, session_id, tool, task, job_uuid, pieces, approved_by, run.case_id)

    def keep(
        self,
        agent: str,
        run_id: str,
        session_id: Optional[str],
        tool: str,
        task: str,
        job_uuid: Optional[str],
        pieces: Iterable[Piece],
        approved_by: Optional[str] = None,
        case_id: Optional[str] = None,
    ) -> List[ArtifactSummary]:
        """Keep each piece as an artifact; their summaries, in order."""
        kept = []
        for piece in pieces:
            summary = ArtifactSummary(
                artifact_id=uuid.uuid4().hex[:16],
                run_id=run_id,
                session_id=session_id,
                agent=agent,
                tool=tool,
                task=task,
                job_uuid=job_uuid,
                worker=piece.worker,
                device=piece.device,
                command=piece.command,
                collected_at=now_iso(),
                sha256=digest(piece.text),
                chars=len(piece.text),
                redacted=piece.redacted,
                approved_by=approved_by,
                case_id=case_id,
            )
            folder = self._dir(agent)
            with self._lock:
                folder.mkdir(parents=True, exist_ok=True)
                write_file(folder / f"{summary.artifact_id}.txt", piece.text)
                with (folder / INDEX).open("a", encoding="utf-8") as index:
                    index.write(summary.model_dump_json() + "\n")
            kept.append(summary)
        if time.time() - self._pruned > PRUNE_EVERY:
            self.prune()
        return kept

    def artifacts(
        self, agent: str, run_id: Optional[str] = None, session_id: Optional[str] = None
    ) -> List[ArtifactSummary]:
        """The agent's artifacts of one run or session (all of them when neither is given), oldest first."""
        return [
            a
            for a in self._index(agent)
            if (run_id is None or a.run_id == run_id) and (session_id is None or a.session_id == session_id)
        ]

    def artifact(self, agent: str, artifact_id: str) -> Artifact:
        """One artifact of the agent, whole; UnknownRun when it is not the agent's (or was deleted)."""
        if not re.match(ARTIFACT_ID, artifact_id or ""):
            raise InvalidRequest(f"artifact_id: '{artifact_id}' is not an artifact id (16 hex characters)")
        summary = next((a for a in self._index(agent) if a.artifact_id == artifact_id), None)
        path = self._dir(agent) / f"{artifact_id}.txt"
        if summary is None or not path.exists():
            raise UnknownArtifact(
                f"artifact '{artifact_id}' not found for agent '{agent}' (artifacts are kept "
                f"{self.retention.days} days)"
            )
        return Artifact(**summary.model_dump(), text=path.read_text(encoding="utf-8"))

    def view(
        self, agent: str, worker: str, run_id: Optional[str], session_id: Optional[str], artifact_id: Optional[str]
    ) -> EvidenceResultData:
        """What the evidence task shows: one artifact whole, or the summaries of a run's or session's."""
        if artifact_id:
            artifact = self.artifact(agent, artifact_id)
            return EvidenceResultData(agent=agent, worker=worker, artifacts=[artifact], artifact=artifact)
        if not (run_id or session_id):
            raise InvalidRequest("run_id: give the run (or session_id, or artifact_id) whose evidence to show")
        found = self.artifacts(agent, run_id=run_id, session_id=session_id)
        return EvidenceResultData(agent=agent, worker=worker, artifacts=found)

    def texts(self, agent: str, artifacts: List[ArtifactSummary]) -> Dict[str, str]:
        """artifact id -> text, for those still on disk."""
        found = {}
        for summary in artifacts:
            path = self._dir(agent) / f"{summary.artifact_id}.txt"
            if path.exists():
                found[summary.artifact_id] = path.read_text(encoding="utf-8")
        return found

    def _index(self, agent: str) -> List[ArtifactSummary]:
        path = self._dir(agent) / INDEX
        if not path.exists():
            return []
        found = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                found.append(ArtifactSummary.model_validate_json(line))
            except ValueError:
                log.warning(f"Skipping an unreadable line of {path}")
        return found

    def prune(self) -> int:
        """Delete artifacts past the retention; how many."""
        self._pruned = time.time()
        cutoff = datetime.now(timezone.utc) - self.retention
        dropped = 0
        for folder in sorted(self.folder.iterdir()) if self.folder.exists() else []:
            with self._lock:
                index = self._index(folder.name)
                keep = [a for a in index if datetime.fromisoformat(a.collected_at) >= cutoff]
                if len(keep) == len(index):
                    continue
                for artifact in index:
                    if artifact not in keep:
                        (folder / f"{artifact.artifact_id}.txt").unlink(missing_ok=True)
                write_file(folder / INDEX, "".join(a.model_dump_json() + "\n" for a in keep))
                dropped += len(index) - len(keep)
        if dropped:
            log.info(f"Deleted {dropped} artifact(s) older than {self.retention.days} days")
        return dropped
