-- Writes a worker kept on its own disk while this database did not answer (outbox.py), each marked here
-- in the transaction that made it, so that none is made twice.
CREATE TABLE buffered_writes (
    outbox TEXT NOT NULL,
    seq BIGINT NOT NULL,
    worker TEXT NOT NULL,
    applied DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (outbox, seq)
);
