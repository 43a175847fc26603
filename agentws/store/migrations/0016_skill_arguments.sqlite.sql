-- Skills take arguments (MCP prompt arguments), declared in SKILL.md's front
-- matter: a JSON list of objects with name, description, required, values.

ALTER TABLE skills ADD COLUMN arguments {json} NOT NULL DEFAULT '[]';
