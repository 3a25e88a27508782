-- A worker moves the writes of its outbox (outbox.py) in order, many in one transaction with one mark: the
-- outbox's number of the last write of the batch. hermes_mark_outbox writes that mark only after the last
-- one the worker moved before (after_seq): when the record lacks writes the worker moved (its server crashed
-- before it flushed commits made without waiting for the flush), the transaction fails and the worker moves
-- them again from its own disk, where they stay until the server has flushed them.
CREATE FUNCTION hermes_mark_outbox(outbox_id TEXT, after_seq BIGINT, last_seq BIGINT, by_worker TEXT, at DOUBLE PRECISION)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    marked BIGINT;
BEGIN
    SELECT coalesce(max(seq), 0) INTO marked FROM buffered_writes WHERE outbox = outbox_id;
    IF marked <> after_seq THEN
        RAISE EXCEPTION 'the record holds the writes of outbox % up to %, not %', outbox_id, marked, after_seq
            USING ERRCODE = 'HR001';
    END IF;
    INSERT INTO buffered_writes (outbox, seq, worker, applied) VALUES (outbox_id, last_seq, by_worker, at);
END
$$;
