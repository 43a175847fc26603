-- The catalog version: a counter that moves whenever anything a group's tool
-- list is made of changes (connectors, their attachments to groups, their
-- cached tools, library attachments, which bring the built-in tools).
-- Processes keep built tool lists in memory and reuse them while the
-- counter stands still, so tools/list costs one tiny read instead of a join
-- and a rebuild; writes elsewhere (events, audit rows, token use) leave the
-- cached lists alone. Kept by triggers, so every writer, in any process,
-- moves it in the same transaction as its change.

CREATE TABLE catalog_version (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
);

INSERT INTO catalog_version (id, version) VALUES (1, 0);

CREATE FUNCTION bump_catalog_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
    RETURN NULL;
END
$$;

-- Once per statement rather than once per row.

CREATE TRIGGER connectors_catalog AFTER INSERT OR UPDATE OR DELETE ON connectors
    FOR EACH STATEMENT EXECUTE FUNCTION bump_catalog_version();

CREATE TRIGGER group_connectors_catalog AFTER INSERT OR UPDATE OR DELETE ON group_connectors
    FOR EACH STATEMENT EXECUTE FUNCTION bump_catalog_version();

CREATE TRIGGER cached_tools_catalog AFTER INSERT OR UPDATE OR DELETE ON cached_tools
    FOR EACH STATEMENT EXECUTE FUNCTION bump_catalog_version();

CREATE TRIGGER group_libraries_catalog AFTER INSERT OR UPDATE OR DELETE ON group_libraries
    FOR EACH STATEMENT EXECUTE FUNCTION bump_catalog_version();
