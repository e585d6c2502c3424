"""The pages' executed blocks (llmlab.build.blocks), without a site build.

tests/test_site.py builds the site through them; here: what a block's output is
keyed on, where it is kept, how a failure reads, and the check of the calls.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from markdown_exec import ExecutionError

from llmlab.build import blocks


def _build(tmp_path: Path, **fields) -> blocks.Blocks:
    return blocks.Blocks(**{"cache": tmp_path, "source": "s", "versions": ["v"], "markdown": "m",
                            "precompute": "p", "memo": {}, "html": {}, "hashes": {},
                            "page": "zh/a.md", **fields})


def test_execute_returns_what_the_code_printed_in_a_module_of_its_own() -> None:
    code = "import dataclasses\n@dataclasses.dataclass\nclass P:\n    x: int\nprint(P(1), end='')\n"
    assert blocks.execute(code, "llmlab_block_test") == "P(x=1)"
    assert "llmlab_block_test" not in sys.modules


def test_a_failing_block_shows_its_traceback_with_its_own_lines() -> None:
    with pytest.raises(ExecutionError) as info:
        blocks.execute("x = 1\nraise ValueError('bad block')\n", "llmlab_block_fails")
    message = str(info.value)
    assert "ValueError: bad block" in message and "raise ValueError('bad block')" in message
    assert "llmlab_block_fails" not in sys.modules


def test_numbers_skip_figure_data_alt_texts_and_sizes() -> None:
    output = ('| loss | 2.5 |\n|---|---|\n| step | 1,000 | −0.25 | 3e-4 | 12% |\n'
              '<img alt="loss after 7 steps" width="640" height="480" src="data:image/png;base64,9AB">')
    assert blocks.numbers(output) == ["2.5", "1,000", "−0.25", "3e-4", "12%"]


def test_the_key_holds_the_language_the_machine_and_the_precompute_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMLAB_LANG", "zh")
    monkeypatch.setenv("LLMLAB_GIT_COMMIT", "abc")
    build = _build(tmp_path)
    plain = blocks.block_key(build, "print(1)", "")
    assert plain == blocks.block_key(build, "print(1)", "")
    assert plain != blocks.block_key(build, "print(2)", "")
    assert plain != blocks.block_key(_build(tmp_path, versions=["w"]), "print(1)", "")
    monkeypatch.setenv("LLMLAB_LANG", "en")
    assert plain != blocks.block_key(build, "print(1)", "")
    # a machine-dependent block: keyed on the commit; one on the precompute run: on it
    timing = blocks.block_key(build, "print(1)", "machine-dependent-x")
    monkeypatch.setenv("LLMLAB_GIT_COMMIT", "def")
    assert blocks.block_key(_build(tmp_path), "print(1)", "machine-dependent-x") != timing
    report = blocks.ALWAYS_RUN + "x"
    assert (blocks.block_key(build, "print(1)", report)
            != blocks.block_key(_build(tmp_path, precompute="q"), "print(1)", report))


def test_a_block_runs_once_then_comes_from_memory_or_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMLAB_LANG", "en")  # not the first language: nothing run ahead
    build = _build(tmp_path)
    code = "print('| a | 1 |')"
    assert blocks.run_block(build, code, id="t") == "| a | 1 |\n"
    assert blocks.run_block(build, code, id="t") == "| a | 1 |\n"
    again = _build(tmp_path)  # a new build: the disk store
    assert blocks.run_block(again, code, id="t") == "| a | 1 |\n"
    assert [r["source"] for r in build.records + again.records] == ["executed", "memo", "disk"]
    stored = json.loads(next((tmp_path / "blocks").glob("*.json")).read_text("utf-8"))
    assert stored == {"output": "| a | 1 |\n", "runs": []}
    # a block that reports on the precompute run is not stored on disk
    blocks.run_block(build, "print(2)", id=blocks.ALWAYS_RUN + "x")
    assert len(list((tmp_path / "blocks").glob("*.json"))) == 1
    with pytest.raises(ExecutionError, match="no session="):
        blocks.run_block(build, code, session="s")


def test_the_first_language_runs_its_blocks_for_the_others_ahead(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMLAB_LANG", "zh")
    monkeypatch.delenv("LLMLAB_BUILD_EN", raising=False)
    build = _build(tmp_path)
    code = "import os\nprint(os.environ['LLMLAB_LANG'])"
    assert blocks.run_block(build, code) == "zh\n"
    monkeypatch.setenv("LLMLAB_LANG", "en")
    assert blocks.run_block(build, code) == "en\n"
    assert [r["source"] for r in build.records] == ["executed", "ahead"]


def test_check_calls_refuses_a_call_precompute_did_not_find() -> None:
    pages = {"lectures/a.md": [{"keys": ["k1"]}]}
    blocks.check_calls({"zh/lectures/a.md": [["exp.run", "k1"]]}, pages)
    with pytest.raises(ValueError, match=r"en/lectures/a\.md calls exp\.other with arguments"):
        blocks.check_calls({"en/lectures/a.md": [["exp.run", "k1"], ["exp.other", "k2"]]}, pages)
