-- Migration 0007 in a worker's SQLite record: the runs' instructions and answer in an FTS5 index of trigrams
-- (case-insensitive), read by get_runs' text filter. It holds no copy of the text (external content: the runs
-- table, row by rowid), no positions (detail=none: LIKE on it reads the candidates' text) and no sizes
-- (columnsize=0: nothing is ranked), so it adds about a hundred bytes per run. Kept by triggers in every
-- write's own transaction; a file an older worker wrote is indexed whole when it is opened (schema.py).
-- Its segments are merged by a thread of the worker (text_merges.py), not by the writes: automerge off, and
-- a write's own crisis merge only at 200 segments on a level (FTS5's default, 16, met a prune's segments at a
-- million runs and held a run's write for up to 290 ms; at most 2,000 segments in all).
CREATE VIRTUAL TABLE IF NOT EXISTS runs_text USING fts5(
    instructions, response, content='runs', content_rowid='rowid', tokenize='trigram', detail='none', columnsize=0
);
INSERT INTO runs_text (runs_text, rank) VALUES ('automerge', 0);
INSERT INTO runs_text (runs_text, rank) VALUES ('crisismerge', 200);
CREATE TRIGGER IF NOT EXISTS runs_text_insert AFTER INSERT ON runs BEGIN
    INSERT INTO runs_text (rowid, instructions, response) VALUES (new.rowid, new.instructions, new.response);
END;
CREATE TRIGGER IF NOT EXISTS runs_text_delete AFTER DELETE ON runs BEGIN
    INSERT INTO runs_text (runs_text, rowid, instructions, response)
    VALUES ('delete', old.rowid, old.instructions, old.response);
END;
CREATE TRIGGER IF NOT EXISTS runs_text_update AFTER UPDATE OF instructions, response ON runs BEGIN
    INSERT INTO runs_text (runs_text, rowid, instructions, response)
    VALUES ('delete', old.rowid, old.instructions, old.response);
    INSERT INTO runs_text (rowid, instructions, response) VALUES (new.rowid, new.instructions, new.response);
END;
