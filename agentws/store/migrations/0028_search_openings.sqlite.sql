-- Search snippets come from each document's opening (its first 16,384
-- characters, agentws.store.sql_catalog), so that making one costs the same
-- whatever the document's size: FTS5's snippet() and highlight() take time
-- quadratic in the matches they look at, and a 1 MiB document repeating a
-- common word took seconds per snippet. The openings have an FTS5 index of
-- their own, with the documents' tokenizer, for highlight() to mark the
-- matched words in; the search itself still ranks whole documents.

CREATE VIRTUAL TABLE context_document_openings USING fts5(
    opening,
    tokenize = 'porter unicode61'
);

-- Documents stored before this migration.
INSERT INTO context_document_openings (rowid, opening)
SELECT rowid, substr(body, 1, 16384) FROM context_documents;

CREATE TRIGGER context_document_openings_insert AFTER INSERT ON context_documents BEGIN
    INSERT INTO context_document_openings (rowid, opening)
    VALUES (NEW.rowid, substr(NEW.body, 1, 16384));
END;

-- Also fires for rows removed by ON DELETE CASCADE (a library or workspace deleted).
CREATE TRIGGER context_document_openings_delete AFTER DELETE ON context_documents BEGIN
    DELETE FROM context_document_openings WHERE rowid = OLD.rowid;
END;

CREATE TRIGGER context_document_openings_update AFTER UPDATE OF body ON context_documents BEGIN
    DELETE FROM context_document_openings WHERE rowid = OLD.rowid;
    INSERT INTO context_document_openings (rowid, opening)
    VALUES (NEW.rowid, substr(NEW.body, 1, 16384));
END;
