"""Libraries, context documents and skills: reading them from disk and keeping them in the store.

``loading`` reads a document from a file and a skill from a ``SKILL.md``
folder; ``service`` creates, attaches, lists and removes libraries, documents
and skills (each change recorded in the audit log); ``checks`` holds the
limits both enforce. The public names are re-exported here.
"""

from agentws.libraries.checks import MAX_DOCUMENT_BYTES, MAX_SKILL_BYTES, format_bytes
from agentws.libraries.loading import (
    DOCUMENT_EXTENSIONS,
    DocumentFile,
    SkillFolder,
    load_document_file,
    load_skill_folder,
    slug_from,
)
from agentws.libraries.service import (
    add_document,
    add_skill,
    attach_library,
    attached_groups,
    create_library,
    detach_library,
    list_documents,
    list_libraries,
    list_skills,
    remove_document,
    remove_skill,
    rename_library,
    set_document_policy,
)

__all__ = [
    "DOCUMENT_EXTENSIONS",
    "MAX_DOCUMENT_BYTES",
    "MAX_SKILL_BYTES",
    "DocumentFile",
    "SkillFolder",
    "add_document",
    "add_skill",
    "attach_library",
    "attached_groups",
    "create_library",
    "detach_library",
    "format_bytes",
    "list_documents",
    "list_libraries",
    "list_skills",
    "load_document_file",
    "load_skill_folder",
    "remove_document",
    "remove_skill",
    "rename_library",
    "set_document_policy",
    "slug_from",
]
