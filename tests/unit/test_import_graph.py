"""scripts/import_graph.py: every module of agentws is in a layer, and one that is not fails it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import import_graph  # noqa: E402


def test_every_module_is_in_a_layer(capsys: pytest.CaptureFixture[str]) -> None:
    assert import_graph.main(["--pyproject", str(ROOT / "pyproject.toml")]) == 0
    assert "modules in no layer: 0" in capsys.readouterr().out


def test_a_module_in_no_layer_fails_and_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (ROOT / "pyproject.toml").read_text()
    # The same contract without the domain package: its modules are in no layer.
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(re.sub(r'\n\s*"agentws\.domain",', "", text, count=1))
    assert import_graph.main(["--pyproject", str(pyproject)]) == 1
    out = capsys.readouterr().out
    assert "  - agentws.domain.rules: in no layer of the contract" in out
