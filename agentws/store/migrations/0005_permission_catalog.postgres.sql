-- The catalog version moves with tool permissions: tool lists carry them
-- (see 0003 for the counter and its function).

CREATE TRIGGER tool_permissions_catalog AFTER INSERT OR UPDATE OR DELETE ON tool_permissions
    FOR EACH STATEMENT EXECUTE FUNCTION bump_catalog_version();
