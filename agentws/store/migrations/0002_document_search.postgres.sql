-- Full-text search over context documents, PostgreSQL side: a stored
-- generated tsvector (english; title weight A, body weight B) with a GIN
-- index. Adding the column computes it for documents stored before this
-- migration.
--
-- A tsvector holds at most 1 MiB, which a 1 MiB body of distinct tokens (a
-- JSON document full of ids) exceeds; the function then indexes as much of
-- the body as fits instead of refusing the document. It is IMMUTABLE because
-- its result depends only on its arguments (the english configuration is
-- named, not taken from a setting), which a generated column requires.

CREATE FUNCTION context_documents_search_vector(title TEXT, body TEXT) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    indexed TEXT := body;
BEGIN
    LOOP
        BEGIN
            RETURN setweight(to_tsvector('english'::regconfig, title), 'A')
                || setweight(to_tsvector('english'::regconfig, indexed), 'B');
        EXCEPTION WHEN program_limit_exceeded THEN
            IF indexed = '' THEN
                RAISE;
            END IF;
            indexed := left(indexed, length(indexed) / 2);
        END;
    END LOOP;
END
$$;

ALTER TABLE context_documents
    ADD COLUMN search tsvector
    GENERATED ALWAYS AS (context_documents_search_vector(title, body)) STORED;

CREATE INDEX context_documents_search ON context_documents USING GIN (search);
