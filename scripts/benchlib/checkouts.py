"""Another checkout of agentws to measure beside this one: ``scripts/bench mcp --baseline-*``.

:func:`baseline_checkout` finds it (``--baseline-checkout DIR``) or
exports it from this repository's history (``--baseline-rev REV``, with
``git archive`` into the run's directory); its agentws is then imported
through ``PYTHONPATH`` (:func:`benchlib.agentws_setup.agentws_env`).
"""

from __future__ import annotations

import argparse
import io
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

from benchlib.procs import BenchError

__all__ = ["baseline_checkout", "git_commit"]


def baseline_checkout(
    args: argparse.Namespace, repo: Path, work: Path, say: Callable[[str], None]
) -> Path | None:
    """The checkout to stand beside this one: ``--baseline-checkout``, or ``--baseline-rev``
    exported from this repository's history into the run's directory."""
    if args.baseline_checkout is not None:
        checkout: Path = args.baseline_checkout.resolve()
        if not (checkout / "agentws" / "agentws.py").is_file():
            raise BenchError(f"--baseline-checkout {checkout}: no agentws package there")
        return checkout
    if args.baseline_rev is None:
        return None
    target = work / "baseline-src"
    target.mkdir()
    say(f"exporting {args.baseline_rev} into {target}")
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", args.baseline_rev, "agentws"],  # noqa: S607
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        raise BenchError(
            f"git archive {args.baseline_rev} failed: {archive.stderr.decode()[-500:]}"
        )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as exported:
        exported.extractall(target, filter="data")
    return target


def git_commit(path: Path, rev: str = "HEAD") -> str | None:
    """The short commit ``rev`` names in the git checkout at ``path`` (None outside git)."""
    done = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--short", f"{rev}^{{commit}}"],  # noqa: S607
        capture_output=True,
        text=True,
        check=False,
    )
    return (done.stdout.strip() or None) if done.returncode == 0 else None
