-- Full-text search over webhook events, PostgreSQL side: a tsvector of each
-- event's words (made by agentws.domain.event_text: header values, then the
-- body's string and number values, already cut, folded and lowercased, and
-- written as a tsvector literal, so no text search configuration is
-- involved) with a GIN index, in a table of its own.
--
-- Computing the tsvector in the transaction that stores an event would more
-- than double the cost of the door's insert (measured: about 25 µs a row
-- alone, 70 µs with the vector and its GIN entry). So the insert only notes
-- the event in a queue (a few µs), and the service's indexer fills the index
-- afterwards, taking from the queue with FOR UPDATE SKIP LOCKED, so several
-- instances share the work. The queue has no foreign key (checking one
-- would cost the insert as much again): the indexer drops entries whose
-- event is gone.

CREATE TABLE event_search (
    event_id TEXT PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
    words tsvector NOT NULL
);
CREATE INDEX event_search_words ON event_search USING GIN (words);

CREATE TABLE event_search_queue (
    event_id TEXT PRIMARY KEY
);

CREATE FUNCTION event_search_enqueue() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO event_search_queue (event_id) VALUES (NEW.id);
    RETURN NULL;
END
$$;

CREATE TRIGGER event_search_enqueue AFTER INSERT ON events
FOR EACH ROW EXECUTE FUNCTION event_search_enqueue();

-- Events stored before this migration.
INSERT INTO event_search_queue (event_id) SELECT id FROM events;
