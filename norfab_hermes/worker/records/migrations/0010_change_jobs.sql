-- a fleet's change jobs whose reply their sender has not read yet (changes/locks.py): a worker killed
-- while its change job ran, or that stopped waiting for it, leaves its rows; the next holder of the
-- device's lock waits for those jobs to end on the network worker before it touches the device
CREATE TABLE change_jobs (
    job_uuid TEXT NOT NULL,
    device TEXT NOT NULL,
    worker TEXT NOT NULL,
    run_id TEXT NOT NULL,
    service TEXT NOT NULL,
    sent TEXT NOT NULL,
    PRIMARY KEY (job_uuid, device)
);
CREATE INDEX change_jobs_device ON change_jobs (device);
