-- Skills take arguments (MCP prompt arguments), declared in SKILL.md's front
-- matter: a JSON list of objects with name, description, required, values.

ALTER TABLE skills ADD COLUMN arguments {json} NOT NULL DEFAULT '[]';

-- A group's resources and prompts are its libraries' documents and skills:
-- announce their changes ("libraries"), so that every instance tells its open
-- MCP sessions their lists changed (see 0010 for agentws_notify). Library
-- attachments move the catalog already (0003), which is announced too.

CREATE TRIGGER context_documents_changed AFTER INSERT OR UPDATE OR DELETE ON context_documents
    FOR EACH STATEMENT EXECUTE FUNCTION agentws_notify('libraries');

CREATE TRIGGER skills_changed AFTER INSERT OR UPDATE OR DELETE ON skills
    FOR EACH STATEMENT EXECUTE FUNCTION agentws_notify('libraries');

CREATE TRIGGER libraries_changed AFTER UPDATE OR DELETE ON libraries
    FOR EACH STATEMENT EXECUTE FUNCTION agentws_notify('libraries');

CREATE TRIGGER group_libraries_changed AFTER INSERT OR UPDATE OR DELETE ON group_libraries
    FOR EACH STATEMENT EXECUTE FUNCTION agentws_notify('libraries');
