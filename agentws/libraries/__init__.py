"""Libraries, context documents and skills: reading them from disk and keeping them in the store.

``loading`` reads a document from a file and a skill from a ``SKILL.md``
folder; ``service`` creates, attaches, lists and removes libraries, documents
and skills (each change recorded in the audit log); ``checks`` holds the
limits both enforce. The public names are re-exported here.
"""

from agentws.libraries import service
from agentws.libraries.checks import MAX_DOCUMENT_BYTES, MAX_SKILL_BYTES, format_bytes
from agentws.libraries.loading import (
    DOCUMENT_EXTENSIONS,
    DocumentFile,
    SkillFolder,
    load_document_file,
    load_skill_folder,
    slug_from,
)

# Everything the service offers is public here too.
from agentws.libraries.service import *  # noqa: F403

__all__ = [
    "DOCUMENT_EXTENSIONS",
    "MAX_DOCUMENT_BYTES",
    "MAX_SKILL_BYTES",
    "DocumentFile",
    "SkillFolder",
    "format_bytes",
    "load_document_file",
    "load_skill_folder",
    "slug_from",
    *service.__all__,
]
