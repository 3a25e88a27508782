-- get_runs on a million runs (issue 34): the filters that found no index walked the whole table
CREATE INDEX runs_state ON runs (state, started);
CREATE INDEX runs_stop_reason ON runs (stop_reason, started);
CREATE INDEX runs_schedule ON runs (schedule_id, started) WHERE schedule_id IS NOT NULL;
CREATE INDEX runs_model ON runs (model, started) WHERE model IS NOT NULL;
