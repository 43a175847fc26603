"""Skill arguments: declared in SKILL.md front matter, put into the prompt as ``{{name}}``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentws.core.errors import ValidationError
from agentws.domain.models import SkillArgument
from agentws.libraries import load_skill_folder
from agentws.libraries.arguments import (
    MAX_ARGUMENTS,
    missing_arguments,
    parse_arguments,
    render_prompt,
)

LANGUAGE = SkillArgument(
    name="language", description="The language", required=True, values=("python", "go")
)
TONE = SkillArgument(name="tone")


def test_declared_arguments_are_read() -> None:
    declared = [
        {
            "name": "language",
            "description": "The   language",
            "required": True,
            "enum": ["python", "go", "python"],
        },
        {"name": "tone"},
        {"name": "year", "examples": [2025, 2026.5]},
    ]
    assert parse_arguments(declared, "SKILL.md") == (
        LANGUAGE,
        TONE,
        SkillArgument(name="year", values=("2025", "2026.5")),
    )
    assert parse_arguments(None, "SKILL.md") == ()


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        ("language", "must be a list"),
        (["language"], "argument 1 must be 'name: ...'"),
        ([{"description": "x"}], "'name' must be"),
        ([{"name": "1st"}], "'name' must be"),
        ([{"name": "a"}, {"name": "a"}], "declared twice"),
        ([{"name": "a", "required": "yes"}], "'required' must be true or false"),
        ([{"name": "a", "description": 3}], "'description' must be text"),
        ([{"name": "a", "enum": "x"}], "'enum' must be a list"),
        ([{"name": "a", "examples": [{"x": 1}]}], "strings or numbers"),
        ([{"name": "a", "default": "x"}], "unknown key(s) default"),
        ([{"name": f"a{n}"} for n in range(MAX_ARGUMENTS + 1)], "at most"),
    ],
)
def test_bad_declarations_say_what_is_wrong(declared: Any, problem: str) -> None:
    with pytest.raises(ValidationError) as error:
        parse_arguments(declared, "SKILL.md")
    assert problem in error.value.message
    assert error.value.message.startswith("SKILL.md")


def test_values_are_put_in() -> None:
    prompt = "Review this {{ language }} code{{tone}}. Keep {{other}} and {{language}}."
    rendered = render_prompt(prompt, (LANGUAGE, TONE), {"language": "go"})
    assert rendered == "Review this go code. Keep {{other}} and go."
    assert render_prompt("{{language}}", (), {"language": "go"}) == "{{language}}"


def test_required_arguments_left_out_are_named() -> None:
    assert missing_arguments((LANGUAGE, TONE), None) == ["language"]
    assert missing_arguments((LANGUAGE, TONE), {"language": ""}) == ["language"]
    assert missing_arguments((LANGUAGE, TONE), {"language": "go"}) == []


def test_a_skill_folder_declares_its_arguments(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text(
        "---\nname: review\ndescription: Review code\narguments:\n"
        "  - name: language\n    description: The language\n    required: true\n"
        "    enum: [python, go]\n---\nReview {{language}} code.\n"
    )
    skill = load_skill_folder(tmp_path)
    assert skill.arguments == (LANGUAGE,)
    assert skill.prompt == "Review {{language}} code."
    (tmp_path / "SKILL.md").write_text(
        "---\nname: review\ndescription: Review code\narguments: 3\n---\nReview.\n"
    )
    with pytest.raises(ValidationError, match="'arguments' must be a list"):
        load_skill_folder(tmp_path)
