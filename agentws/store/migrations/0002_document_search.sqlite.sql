-- Full-text search over context documents, SQLite side: an FTS5 index whose
-- text lives in context_documents itself (external content), kept in step by
-- triggers. The rowid links the two: context_documents has no INTEGER PRIMARY
-- KEY, and SQLite keeps such rowids through VACUUM (its copy path preserves
-- them); should an index ever drift, INSERT ... VALUES ('rebuild') re-creates it.
-- Porter stemming so "deploying" finds "deploy"; unicode61 folds case and
-- diacritics for every script.

CREATE VIRTUAL TABLE context_documents_fts USING fts5(
    title,
    body,
    content = 'context_documents',
    tokenize = 'porter unicode61'
);

-- Documents stored before this migration.
INSERT INTO context_documents_fts (context_documents_fts) VALUES ('rebuild');

CREATE TRIGGER context_documents_fts_insert AFTER INSERT ON context_documents BEGIN
    INSERT INTO context_documents_fts (rowid, title, body)
    VALUES (NEW.rowid, NEW.title, NEW.body);
END;

-- Also fires for rows removed by ON DELETE CASCADE (a library or workspace deleted).
CREATE TRIGGER context_documents_fts_delete AFTER DELETE ON context_documents BEGIN
    INSERT INTO context_documents_fts (context_documents_fts, rowid, title, body)
    VALUES ('delete', OLD.rowid, OLD.title, OLD.body);
END;

-- An external-content index forgets a row by being told its old text.
CREATE TRIGGER context_documents_fts_update AFTER UPDATE OF title, body ON context_documents BEGIN
    INSERT INTO context_documents_fts (context_documents_fts, rowid, title, body)
    VALUES ('delete', OLD.rowid, OLD.title, OLD.body);
    INSERT INTO context_documents_fts (rowid, title, body)
    VALUES (NEW.rowid, NEW.title, NEW.body);
END;
