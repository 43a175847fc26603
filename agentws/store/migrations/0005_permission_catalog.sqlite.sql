-- The catalog version moves with tool permissions: tool lists carry them
-- (see 0003 for the counter).

CREATE TRIGGER tool_permissions_catalog_insert AFTER INSERT ON tool_permissions BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER tool_permissions_catalog_update AFTER UPDATE ON tool_permissions BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER tool_permissions_catalog_delete AFTER DELETE ON tool_permissions BEGIN
    UPDATE catalog_version SET version = version + 1 WHERE id = 1;
END;

