"""The shipped base models: they load strictly, say how they were made, and their
recorded command still makes them (its first steps, to 1e-4)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from llmlab import cli, pretrained
from llmlab.generation import generate
from llmlab.models.llama import TransformerLM
from llmlab.tokenization import END_OF_TEXT

ROOT = Path(__file__).resolve().parent.parent
RERUN_STEPS = 20


@pytest.mark.parametrize("name", pretrained.NAMES)
def test_a_base_model_loads_into_the_current_code(name):
    model, tokenizer = pretrained.load(name)
    assert isinstance(model, TransformerLM) and not model.training
    assert all(p.dtype == torch.float32 for p in model.parameters())
    card = pretrained.card(name)
    assert (model.vocab_size, model.context_length) == (card.config.vocab_size,
                                                        card.config.context_length)
    assert sum(p.numel() for p in model.parameters()) == card.config.parameter_count()
    ids = tokenizer.encode("\n")
    text = tokenizer.decode(generate(model, ids, 8, generator=torch.Generator().manual_seed(0)))
    assert isinstance(text, str) and text


@pytest.mark.parametrize("name", pretrained.NAMES)
def test_a_base_model_is_small_and_says_how_it_was_made(name):
    card = pretrained.card(name)
    assert card.folder_bytes <= 5_000_000
    assert {p.name for p in pretrained.folder(name).iterdir()} == {
        pretrained.CHECKPOINT, pretrained.CONFIG, pretrained.METRICS, pretrained.TOKENIZER}
    assert card.command[0] == "llmlab-train" and "--data" in card.command
    assert len(card.commit) >= 40 and not card.commit.endswith("+changes")
    assert card.torch and isinstance(card.wall_seconds, float)  # recorded, shown
    # the whole loss curve: one training loss per step, validation as recorded
    assert card.iterations == list(range(1, card.steps + 1))
    assert len(card.losses) == card.steps and card.val_iterations[-1] == card.steps
    assert card.val_losses[-1] < card.val_losses[0] < card.losses[0]


def test_the_cli_keeps_its_copies_of_the_base_models_and_end_of_text_equal():
    assert cli.BASE_MODELS == pretrained.NAMES  # copies: --help imports neither
    assert cli.EOS == END_OF_TEXT


@pytest.mark.parametrize("name", pretrained.NAMES)
def test_llmlab_generate_takes_a_base_model_by_name(name, capsys):
    prompt = {"shakespeare": "ROMEO:", "tang": "春"}[name]
    argv = ["--model", name, "--prompt", prompt, "--max-new-tokens", "12", "--seed", "1"]
    assert cli.generate_main(argv) == 0
    first = capsys.readouterr().out
    assert first.startswith(prompt) and len(first) > len(prompt) + 1
    assert cli.generate_main(argv) == 0
    assert capsys.readouterr().out == first  # seeded


def test_a_base_model_that_no_longer_fits_fails_loudly(tmp_path, monkeypatch):
    broken = tmp_path / "tang"
    shutil.copytree(pretrained.folder("tang"), broken)
    record = json.loads((broken / pretrained.CONFIG).read_text(encoding="utf-8"))
    record["model"]["d_ff"] += 16  # the code's model now has other shapes
    (broken / pretrained.CONFIG).write_text(json.dumps(record), encoding="utf-8")
    monkeypatch.setattr(pretrained, "_DIR", tmp_path)
    with pytest.raises(RuntimeError, match=r"no longer fits.*scripts/train_base_models.py tang"):
        pretrained.load("tang")


def _draft_folder(name: str) -> Path:
    return pretrained.folder(name).with_name(name + pretrained.DRAFT_SUFFIX)


@pytest.mark.parametrize("folder", [*pretrained.NAMES,
                                    *(n + pretrained.DRAFT_SUFFIX for n in pretrained.NAMES)])
def test_the_recorded_command_reproduces_the_first_steps(folder, tmp_path, monkeypatch):
    """Rerun the shipped command (a base model's or a draft's) for RERUN_STEPS steps,
    on the same schedule."""
    name = folder.removesuffix(pretrained.DRAFT_SUFFIX)  # the corpus
    shipped = pretrained.folder(name).with_name(folder)
    record = pretrained.read_config(shipped)
    command = list(record["provenance"]["command"])
    data = command[command.index("--data") + 1]
    text = pretrained.training_text(name)
    assert hashlib.sha256(text.encode()).hexdigest() == record["provenance"]["data_sha256"]
    (tmp_path / data).write_text(text, encoding="utf-8")
    out = command[command.index("--out") + 1]
    monkeypatch.chdir(tmp_path)
    assert cli.train_main([*command[1:], "--stop-at", str(RERUN_STEPS)]) == 0
    metrics = json.loads((tmp_path / out / pretrained.METRICS).read_text())
    shipped_losses = json.loads((shipped / pretrained.METRICS).read_text())["losses"]
    assert metrics["iterations"] == list(range(1, RERUN_STEPS + 1))
    assert metrics["losses"] == pytest.approx(shipped_losses[:RERUN_STEPS], abs=1e-4)
    # the same tokenizer, too
    assert (tmp_path / out / pretrained.TOKENIZER).read_bytes() == (
        shipped / pretrained.TOKENIZER).read_bytes()


@pytest.mark.parametrize("name", pretrained.NAMES)
def test_a_draft_is_smaller_and_reads_its_base_models_tokens(name):
    target, _ = pretrained.load(name)
    draft = pretrained.load_draft(name)
    assert isinstance(draft, TransformerLM) and not draft.training
    assert (draft.vocab_size, draft.context_length) == (target.vocab_size,
                                                        target.context_length)
    assert 3 * sum(p.numel() for p in draft.parameters()) < sum(
        p.numel() for p in target.parameters())
    # the same tokenizer file: the same ids for the same text
    assert (_draft_folder(name) / pretrained.TOKENIZER).read_bytes() == (
        pretrained.folder(name) / pretrained.TOKENIZER).read_bytes()
    record = pretrained.read_config(_draft_folder(name))
    assert record["provenance"]["corpus"] == name
    assert not record["provenance"]["commit"].endswith("+changes")
    assert {p.name for p in _draft_folder(name).iterdir()} == {
        pretrained.CHECKPOINT, pretrained.CONFIG, pretrained.METRICS, pretrained.TOKENIZER}


def test_the_training_script_records_what_the_tests_rerun():
    spec = subprocess.run([sys.executable, str(ROOT / "scripts" / "train_base_models.py"),
                           "--help"], capture_output=True, text=True, check=True)
    assert "shakespeare" in spec.stdout and "tang" in spec.stdout
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import train_base_models
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    for name in pretrained.NAMES:
        command = pretrained.card(name).command
        args = train_base_models.ARGUMENTS[name]
        assert command[3:3 + len(args)] == args, name
        draft = pretrained.read_config(_draft_folder(name))["provenance"]["command"]
        args = train_base_models.ARGUMENTS[name + pretrained.DRAFT_SUFFIX]
        assert draft[3:3 + len(args)] == args, name


def test_the_base_models_meet_their_quality_targets():
    """Issue 37's targets, at llmlab-generate's default temperature (0.8), seeded."""
    from llmlab.experiments.base_models import run_base_model

    english = run_base_model.uncached("shakespeare", temperatures=(0.8,))
    assert english.held_out.nats_per_character <= 1.9
    assert english.samples[0].known_word_rate >= 0.9
    chinese = run_base_model.uncached("tang", temperatures=(0.8,))
    assert chinese.samples[0].verse_rate >= 0.5
    assert chinese.samples[0].known_character_rate >= 0.99
    # each measure rests on enough text to mean something
    assert english.samples[0].words >= 500 and chinese.samples[0].lines >= 100
    # the page's table of how they were made: the recorded device in each language
    from llmlab.report.training import base_models_table

    table = base_models_table([english, chinese])
    zh, en = table.render("zh"), table.render("en")
    assert english.card.device in en and " cores" not in zh and "核" in zh
