-- The audit viewer's filters (agentws.store.sql_audit): each filter that can be
-- narrow is indexed together with the list's order, (created_at, id), so a page
-- under it is one range scan of its own rows, newest first. A tool call's group,
-- decision and OAuth client are in its JSON detail: those indexes are on the
-- very expressions the queries use. The time index gains the id (pages are
-- keyed on both) and replaces the one on created_at alone.

DROP INDEX audit_log_time;
CREATE INDEX audit_log_order ON audit_log (created_at, id);
CREATE INDEX audit_log_workspace ON audit_log (workspace_id, created_at, id);
CREATE INDEX audit_log_actor ON audit_log (actor, created_at, id);
CREATE INDEX audit_log_target ON audit_log (target, created_at, id);
CREATE INDEX audit_log_group ON audit_log ((detail->>'group_id'), created_at, id);
CREATE INDEX audit_log_decision ON audit_log ((detail->>'decision'), created_at, id);
CREATE INDEX audit_log_oauth_client ON audit_log ((detail->>'oauth_client'), created_at, id);
