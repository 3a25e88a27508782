-- The audit chain's head row always exists and names the last entry, so that a worker appends after the
-- head it last wrote without reading it first (one round trip per write): hermes_move_head moves the
-- head in the same transaction and fails it when another worker appended meanwhile (the worker reads
-- the head again and writes once more).
INSERT INTO audit_anchor (name, seq, hash)
    SELECT 'head', seq, hash FROM audit ORDER BY seq DESC LIMIT 1
    ON CONFLICT (name) DO UPDATE SET seq = excluded.seq, hash = excluded.hash
    WHERE audit_anchor.seq = 0;
INSERT INTO audit_anchor (name, seq, hash)
    SELECT 'head', seq, hash FROM audit_anchor WHERE name = 'pruned'
    ON CONFLICT (name) DO NOTHING;
INSERT INTO audit_anchor (name, seq, hash) VALUES ('head', 0, repeat('0', 64)) ON CONFLICT (name) DO NOTHING;

CREATE FUNCTION hermes_move_head(before_seq BIGINT, before_hash TEXT, after_seq BIGINT, after_hash TEXT)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE audit_anchor SET seq = after_seq, hash = after_hash
        WHERE name = 'head' AND seq = before_seq AND hash = before_hash;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the audit chain moved: its head is no longer entry %', before_seq
            USING ERRCODE = 'serialization_failure';
    END IF;
END
$$;
