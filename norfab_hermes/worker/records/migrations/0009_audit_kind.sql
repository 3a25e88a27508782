-- The console's approvals history asks a kind's newest audit entries (get_audit newest_first): with
-- 10,000 decisions in the log, this index finds the last 50 of a kind without walking the whole log
CREATE INDEX audit_kind ON audit (kind, seq);
