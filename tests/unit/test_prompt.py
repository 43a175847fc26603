"""The system prompt: the rules, the group's spine documents within their budget, the prompt."""

from __future__ import annotations

from agentws.agent.prompt import SERVICE_RULES, SPINE_BUDGET_CHARS, system_prompt
from agentws.domain.models import ContextDocument, DocumentPolicy


def document(slug: str, body: str) -> ContextDocument:
    return ContextDocument(
        library_id="lib_x",
        slug=slug,
        title=slug.replace("-", " ").title(),
        body=body,
        policy=DocumentPolicy.SPINE,
    )


def test_without_a_spine_the_rules_then_the_instructions() -> None:
    text = system_prompt("  Summarise the deploy.  ")
    assert text.startswith(SERVICE_RULES)
    assert text.endswith("## The webhook's instructions\n\nSummarise the deploy.")
    assert "The group's documents" not in text


def test_spine_documents_go_in_whole_and_in_order() -> None:
    first = document("escalation", "Page the on-call engineer for sev1.")
    second = document("glossary", "SLO: service level objective.")
    text = system_prompt("Triage.", [first, second])
    rules, spine, instructions = (
        text.index(SERVICE_RULES),
        text.index("## The group's documents"),
        text.index("## The webhook's instructions"),
    )
    assert rules < spine < instructions
    assert text.index("### Escalation\n\nPage the on-call") < text.index("### Glossary\n\nSLO:")
    assert "read_context_document" not in text


def test_what_does_not_fit_is_listed_by_title_for_the_model_to_read() -> None:
    small = document("escalation", "Page the on-call engineer.")
    huge = document("runbook", "x" * SPINE_BUDGET_CHARS)
    after = document("glossary", "Short, but after one that did not fit.")
    text = system_prompt("Triage.", [small, huge, after])
    assert "Page the on-call engineer." in text
    assert "x" * 100 not in text and "Short, but after" not in text
    assert f"- Runbook (id {huge.id})" in text
    assert f"- Glossary (id {after.id})" in text
    assert "read_context_document(id=...)" in text
    assert len(text) < len(SERVICE_RULES) + SPINE_BUDGET_CHARS
