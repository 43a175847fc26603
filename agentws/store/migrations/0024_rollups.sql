-- The overview's rollups: per-minute buckets of each workspace's figures
-- (and hourly ones rolled from them, for the 7-day range), the mark of how
-- far the rollup of closed minutes has come, and the indexes the rollup
-- reads its sources by (see agentws.rollups.minutes).
--
-- A bucket is keyed by workspace, span (1 or 60 minutes), its start in
-- minutes since the epoch, series, key and instance ("" except for the
-- sessions each instance samples). Reads walk the primary key of one
-- workspace and span in time order; the retention sweep walks the minute
-- index.

CREATE TABLE rollup_buckets (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    span_m INTEGER NOT NULL,
    minute BIGINT NOT NULL,
    series TEXT NOT NULL,
    key TEXT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    instance_id TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (workspace_id, span_m, minute, series, key, instance_id)
);
CREATE INDEX rollup_buckets_minute ON rollup_buckets (span_m, minute);

CREATE TABLE rollup_marks (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    minute BIGINT NOT NULL,
    delivery_id BIGINT NOT NULL
);

-- Events and attempts by when they finished: partial, so a delivery's insert
-- (finished_at is empty) pays nothing; a run's end adds one entry.
CREATE INDEX events_finished ON events (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX event_attempts_finished ON event_attempts (finished_at) WHERE finished_at IS NOT NULL;
