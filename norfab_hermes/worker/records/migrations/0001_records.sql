-- The record's tables, one for every worker of the fleet, and the holders of device locks. A worker's
-- SQLite record takes its tables from these files too (schema.py): they are written once, here.
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    worker TEXT NOT NULL,
    state TEXT NOT NULL,
    stop_reason TEXT,
    started DOUBLE PRECISION NOT NULL,
    finished DOUBLE PRECISION,
    session_id TEXT,
    schedule_id TEXT,
    job_uuid TEXT,
    client TEXT,
    dedupe_key TEXT,
    parent_run_id TEXT,
    instructions TEXT NOT NULL,
    response TEXT NOT NULL DEFAULT '',
    tool_calls INTEGER NOT NULL DEFAULT 0,
    calls_so_far TEXT,
    api_calls INTEGER NOT NULL DEFAULT 0,
    input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    total_tokens BIGINT NOT NULL DEFAULT 0,
    cost_usd DOUBLE PRECISION,
    case_id TEXT,
    model TEXT,
    provider TEXT,
    hermes_version TEXT,
    norfab_hermes_version TEXT,
    definition_digest TEXT
);
CREATE TABLE run_details (run_id TEXT PRIMARY KEY, detail BYTEA NOT NULL);
CREATE INDEX runs_started ON runs (started);
CREATE INDEX runs_agent ON runs (agent, started);
CREATE INDEX runs_dedupe ON runs (agent, dedupe_key) WHERE dedupe_key IS NOT NULL;
CREATE INDEX runs_case ON runs (case_id, started) WHERE case_id IS NOT NULL;
CREATE INDEX runs_open ON runs (worker) WHERE finished IS NULL;

CREATE TABLE approvals (
    approval_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    state TEXT NOT NULL,
    requested TEXT NOT NULL,
    decided_by TEXT,
    info TEXT NOT NULL
);
CREATE INDEX approvals_run ON approvals (run_id);
CREATE INDEX approvals_decided_by ON approvals (decided_by);

CREATE TABLE audit (
    seq BIGINT PRIMARY KEY,
    time TEXT NOT NULL,
    worker TEXT NOT NULL,
    kind TEXT NOT NULL,
    agent TEXT,
    run_id TEXT,
    actor TEXT,
    data TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX audit_time ON audit (time);
CREATE INDEX audit_run ON audit (run_id);
CREATE TABLE audit_anchor (name TEXT PRIMARY KEY, seq BIGINT NOT NULL, hash TEXT NOT NULL);

CREATE TABLE usage (
    agent TEXT NOT NULL,
    day TEXT NOT NULL,
    tokens BIGINT NOT NULL DEFAULT 0,
    cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (agent, day)
);

-- who holds a device lock (the lock itself is a session advisory lock: it ends with its connection)
CREATE TABLE device_locks (
    device TEXT PRIMARY KEY,
    worker TEXT NOT NULL,
    run_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    tool TEXT NOT NULL,
    since DOUBLE PRECISION NOT NULL
);

-- one id for the record, so that a client asking several workers of one fleet counts its runs once
CREATE TABLE record_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO record_meta (name, value) VALUES ('record_id', gen_random_uuid()::text);
