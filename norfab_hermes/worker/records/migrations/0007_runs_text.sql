-- get_runs' text filter on a million runs (issue "Scale"): a substring of the instructions or the answer, in any
-- case, found through trigram indexes instead of reading every run. pg_trgm ships with PostgreSQL (Debian's
-- postgresql-15 has it) and is a trusted extension: the database's owner may create it. A worker's SQLite record
-- keeps the same filter in an FTS5 table of its own (sqlite/0007_runs_text.sql).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX runs_instructions_text ON runs USING gin (lower(instructions) gin_trgm_ops);
CREATE INDEX runs_response_text ON runs USING gin (lower(response) gin_trgm_ops);
