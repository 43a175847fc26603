-- A remote MCP tool is passed on to callers with what the remote listed
-- beyond name, description and input schema (title, output schema, icons,
-- _meta, annotations): the whole definition as JSON. Rows cached before
-- have none until the next refresh.

ALTER TABLE cached_tools ADD COLUMN remote_definition {json} NOT NULL DEFAULT '{{}}';
