"""The package type-checks under ``mypy --strict``, both itself and as an application that
imports it sees it (py.typed; every name in ``yaok.__all__`` explicitly exported)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import yaok
from yaok import errors

from conftest import REPO

PACKAGE_ROOT = REPO / "bindings" / "python"
CACHE = REPO / "build" / "mypy-cache"  # build/ is ignored by git


def run_mypy(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, MYPYPATH=str(PACKAGE_ROOT))
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(CACHE), *args],
                          cwd=REPO, env=env, capture_output=True, text=True)


def test_package_passes_mypy_strict():
    result = run_mypy(str(PACKAGE_ROOT / "yaok"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_all_is_a_literal_list_with_every_error_name():
    """mypy only treats names as re-exported when ``__all__`` is a list it can read, so the
    error classes are listed by name, not added from errors.__all__ at run time."""
    assert set(errors.__all__) <= set(yaok.__all__)
    assert len(yaok.__all__) == len(set(yaok.__all__))
    for name in yaok.__all__:
        assert hasattr(yaok, name), name


def test_an_application_using_the_public_names_passes_mypy_strict(tmp_path: Path):
    uses = "\n".join(f"    print(yaok.{name})" for name in yaok.__all__)
    app = tmp_path / "app.py"
    app.write_text(textwrap.dedent("""\
        from typing import List, Optional

        import yaok
        from yaok import Node, NodeStatus, WrongPIN


        def show(node: Node) -> NodeStatus:
            return node.status()


        def first_unread(node: yaok.Node, contact_id: int) -> Optional[yaok.Message]:
            page: yaok.HistoryPage = node.history(contact_id, limit=10)
            unread: List[yaok.Message] = [m for m in page.messages if m.unread]
            return unread[0] if unread else None


        def unlock(node: yaok.Node, pin: str) -> bool:
            try:
                node.unlock(pin)
            except WrongPIN as e:
                print(e.status, e.message)
                return False
            except yaok.LockedOut:
                return False
            return True


        def every_name() -> None:
        """) + uses + "\n")
    result = run_mypy(str(app))
    assert result.returncode == 0, result.stdout + result.stderr
