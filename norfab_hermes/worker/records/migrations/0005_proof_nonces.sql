-- the nonces of operators' proofs, until each proof expires (nonces.py)
CREATE TABLE proof_nonces (
    nonce TEXT NOT NULL,
    worker TEXT NOT NULL,
    job TEXT NOT NULL,
    expires DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (nonce, worker)
);
CREATE INDEX proof_nonces_expires ON proof_nonces (expires);
