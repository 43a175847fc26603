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

-- SQLite triggers run per row; these tables change rarely (admin actions, refreshes).

CREATE TRIGGER connectors_catalog_insert AFTER INSERT ON connectors BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER connectors_catalog_update AFTER UPDATE ON connectors BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER connectors_catalog_delete AFTER DELETE ON connectors BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER group_connectors_catalog_insert AFTER INSERT ON group_connectors BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER group_connectors_catalog_update AFTER UPDATE ON group_connectors BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER group_connectors_catalog_delete AFTER DELETE ON group_connectors BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER cached_tools_catalog_insert AFTER INSERT ON cached_tools BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER cached_tools_catalog_update AFTER UPDATE ON cached_tools BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER cached_tools_catalog_delete AFTER DELETE ON cached_tools BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER group_libraries_catalog_insert AFTER INSERT ON group_libraries BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER group_libraries_catalog_update AFTER UPDATE ON group_libraries BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER group_libraries_catalog_delete AFTER DELETE ON group_libraries BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;
