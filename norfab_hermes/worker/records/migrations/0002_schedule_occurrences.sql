-- grouped schedules: who runs each due occurrence (occurrences.py)
CREATE TABLE schedule_occurrences (
    grp TEXT NOT NULL,
    agent TEXT NOT NULL,
    name TEXT NOT NULL,
    due TEXT NOT NULL,
    worker TEXT NOT NULL,
    claimed DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (grp, agent, name, due)
);
