-- get_runs filters that a year of runs makes slow without an index of their own (benchmarks/bench_million.py):
-- each newest first, so a page is read from the index and the count from the index alone
CREATE INDEX runs_state ON runs (state, started);
CREATE INDEX runs_stop_reason ON runs (stop_reason, started);
CREATE INDEX runs_schedule ON runs (schedule_id, started) WHERE schedule_id IS NOT NULL;
