-- Lists of queued calls read a preview and the size of each call's
-- arguments, never the arguments themselves (which may be hundreds of KiB),
-- and a cap counts each requester's pending calls.
--
-- PostgreSQL keeps large values out of line (TOAST) and reads them only
-- when a query selects them, so new columns are enough here (SQLite's
-- table is made anew, see the .sqlite.sql). Rows queued before this get a
-- preview of their arguments as jsonb prints them, and that text's size.

ALTER TABLE approvals ADD COLUMN arguments_preview TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN arguments_bytes INTEGER NOT NULL DEFAULT 0;
UPDATE approvals SET
    arguments_preview = CASE WHEN length(arguments::text) <= 300 THEN arguments::text
        ELSE left(arguments::text, 299) || '…' END,
    arguments_bytes = octet_length(arguments::text);
ALTER TABLE approvals ALTER COLUMN arguments_preview DROP DEFAULT;
ALTER TABLE approvals ALTER COLUMN arguments_bytes DROP DEFAULT;

CREATE INDEX approvals_created ON approvals (created_at, id);
CREATE INDEX approvals_requester ON approvals (requested_by, status, expires_at);
