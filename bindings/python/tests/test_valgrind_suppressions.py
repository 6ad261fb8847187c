"""scripts/valgrind-swift.supp hides the Swift runtime's one-time caches and nothing else
(issue 21 §4): a small C program that opens a node, sets it up, reads its own card and frees
everything shows blocks "possibly lost" under valgrind without the file, none with it, and
nothing "definitely lost" either way. Skipped where valgrind or a C compiler is missing."""

import os
import re
import shutil
import subprocess

import pytest

import yaok

from conftest import REPO

SUPPRESSIONS = REPO / "scripts" / "valgrind-swift.supp"

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "yaok.h"
int main(int argc, char **argv) {
    (void)argc;
    yaok_node *node = NULL;
    uint32_t warnings = 0;
    if (yaok_node_open(argv[1], YAOK_NODE_OPEN_TEST_FAST_KDF, &node) != YAOK_OK) return 2;
    if (yaok_node_setup(node, "Alice", "135790", "135790", &warnings) != YAOK_OK) return 3;
    yaok_card *card = NULL;
    char *text = NULL;
    if (yaok_node_card(node, &card) != YAOK_OK || yaok_card_text(card, &text) != YAOK_OK) return 4;
    yaok_string_free(text);
    yaok_card_free(card);
    yaok_node_free(node);
    return 0;
}
"""


def lost(output: str, kind: str) -> int:
    m = re.search(rf"{kind} lost: ([\d,]+) bytes", output)
    return int(m.group(1).replace(",", "")) if m else 0


@pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("cc") is None,
                    reason="needs valgrind and a C compiler")
def test_the_suppressions_hide_the_runtime_caches_only(tmp_path):
    library = os.path.realpath(yaok.load_library())
    source = tmp_path / "app.c"
    source.write_text(PROGRAM)
    app = tmp_path / "app"
    link_dir = tmp_path / "lib"
    link_dir.mkdir()
    for name in ("libyaok.so", f"libyaok.so.{yaok.ABI_VERSION}"):  # to link, and by its SONAME
        (link_dir / name).symlink_to(library)
    subprocess.run(["cc", "-std=c11", f"-I{REPO / 'include'}", str(source), f"-L{link_dir}", "-lyaok",
                    f"-Wl,-rpath,{link_dir}", "-o", str(app)], check=True)
    env = dict(os.environ, YAOK_TEST_INSECURE_KDF="1")

    def run(*extra: str) -> str:
        result = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=definite,possible",
                                 *extra, str(app), str(tmp_path / f"node{len(extra)}")],
                                env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stderr

    plain = run()
    assert lost(plain, "definitely") == 0 and lost(plain, "possibly") > 0, plain[-1500:]
    suppressed = run(f"--suppressions={SUPPRESSIONS}")
    assert lost(suppressed, "definitely") == 0 and lost(suppressed, "possibly") == 0, suppressed[-1500:]
