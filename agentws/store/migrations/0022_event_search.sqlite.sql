-- Full-text search over webhook events, SQLite side: an FTS5 index of each
-- event's words (made by agentws.domain.event_text: header values, then the
-- body's string and number values, already cut, folded and lowercased, so
-- the tokenizer only splits at spaces), whose rowid is the event's rowid.
--
-- Nothing is added to the transaction that stores an event: the door's
-- group commit stays as cheap as it was. The service's indexer fills the
-- index afterwards, in rowid order, and the events still to index are those
-- above the highest rowid indexed (SQLite has one writer, so rowids are
-- given in commit order; see agentws.store.sql_event_search). The index
-- keeps its own copy of the words (not the body's JSON): an external-content
-- index cannot forget a row whose text it is not told again.
--
-- Events stored before this migration are above rowid 0: the indexer takes
-- them too.

CREATE VIRTUAL TABLE event_search USING fts5(
    words,
    tokenize = 'unicode61 remove_diacritics 0'
);

-- Also fires for rows removed by ON DELETE CASCADE (a webhook or workspace
-- deleted). A rowid above every indexed one that is freed and given again
-- is then above the highest indexed rowid once more, so indexed in turn.
CREATE TRIGGER event_search_delete AFTER DELETE ON events BEGIN
    DELETE FROM event_search WHERE rowid = OLD.rowid;
END;
