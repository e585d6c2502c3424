"""llmlab-train and llmlab-generate end to end, on a small text in a temp folder.

Most runs call the entry points in this process (fast); two run the real command
line in a subprocess (``python -m llmlab.cli``) to pin the exit code and streams.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch

import llmlab
from llmlab import cli

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--context-length", "16", "--d-model", "16", "--num-layers", "1",
        "--num-heads", "2", "--batch-size", "4", "--eval-every", "5",
        "--eval-batches", "2"]
TEXT = ("To be, or not to be, that is the question:\n"
        "Whether 'tis nobler in the mind to suffer\n"
        "The slings and arrows of outrageous fortune,\n") * 12


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "text.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder trained for 10 steps, shared by the generate tests."""
    tmp = tmp_path_factory.mktemp("trained")
    data = tmp / "text.txt"
    data.write_text(TEXT, encoding="utf-8")
    out = tmp / "run"
    assert cli.train_main(["--data", str(data), "--steps", "10", "--out", str(out),
                           *TINY]) == 0
    return out


def _fails(capsys: pytest.CaptureFixture, main, argv: list[str], *needles: str) -> str:
    """Run ``main(argv)``; assert exit 2 and a one-line error naming each needle."""
    code = main(argv)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2, captured
    assert len(lines) == 1, lines
    assert lines[0].startswith(("llmlab-train: error: ", "llmlab-generate: error: "))
    assert "Traceback" not in captured.err and captured.out == ""
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# --- llmlab-train -------------------------------------------------------------------


def test_train_writes_a_checkpoint_and_says_where(tmp_path, corpus, capsys):
    out = tmp_path / "run"
    assert cli.train_main(["--data", str(corpus), "--steps", "10", "--out", str(out),
                           *TINY]) == 0
    captured = capsys.readouterr()
    assert f"checkpoint: {out / 'checkpoint.pt'}" in captured.out
    assert {p.name for p in out.iterdir()} == {"checkpoint.pt", "config.json",
                                               "metrics.json"}
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["iteration"] == 10 and config["tokenizer"]["kind"] == "bytes"
    assert config["model"]["d_model"] == 16 and config["model"]["vocab_size"] == 256
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["iterations"] == list(range(1, 11))
    assert metrics["val_iterations"] == [5, 10]
    assert all(v < 5.6 for v in metrics["val_losses"])  # below ln 256 already


def test_train_resume_after_an_interruption_equals_one_run(tmp_path, corpus, capsys,
                                                          monkeypatch):
    straight, split = tmp_path / "straight", tmp_path / "split"
    args = ["--data", str(corpus), "--steps", "10", *TINY]
    assert cli.train_main([*args, "--out", str(straight)]) == 0
    # the same run, interrupted (Ctrl-C) after step 7: the last checkpoint is step 5
    import llmlab.training

    real_train = llmlab.training.train

    def interrupted(*a, callback, **kw):
        def stop_after_7(event):
            callback(event)
            if event.iteration == 7:
                raise KeyboardInterrupt
        return real_train(*a, callback=stop_after_7, **kw)

    monkeypatch.setattr(llmlab.training, "train", interrupted)
    assert cli.train_main([*args, "--out", str(split)]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert json.loads((split / "config.json").read_text("utf-8"))["iteration"] == 5
    monkeypatch.setattr(llmlab.training, "train", real_train)
    assert cli.train_main([*args, "--out", str(split), "--resume"]) == 0
    capsys.readouterr()
    a = torch.load(straight / "checkpoint.pt", weights_only=True)["model"]
    b = torch.load(split / "checkpoint.pt", weights_only=True)["model"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    ma = json.loads((straight / "metrics.json").read_text(encoding="utf-8"))
    mb = json.loads((split / "metrics.json").read_text(encoding="utf-8"))
    assert ma["losses"] == mb["losses"] and ma["iterations"] == mb["iterations"]


def test_train_stop_at_keeps_the_schedule_and_resumes_into_one_run(tmp_path, corpus,
                                                                    capsys):
    straight, split = tmp_path / "straight", tmp_path / "split"
    args = ["--data", str(corpus), "--steps", "10", *TINY]
    assert cli.train_main([*args, "--out", str(straight)]) == 0
    assert cli.train_main([*args, "--out", str(split), "--stop-at", "4"]) == 0
    assert "(step 4, validation loss" in capsys.readouterr().out
    part = json.loads((split / "metrics.json").read_text(encoding="utf-8"))
    assert part["iterations"] == [1, 2, 3, 4] and part["val_iterations"] == [4]
    whole = json.loads((straight / "metrics.json").read_text(encoding="utf-8"))
    assert part["losses"] == whole["losses"][:4]  # the schedule of --steps 10
    _fails(capsys, cli.train_main, [*args, "--out", str(split), "--resume",
                                    "--stop-at", "3"], "--stop-at must lie in 5..10")
    assert cli.train_main([*args, "--out", str(split), "--resume"]) == 0
    capsys.readouterr()
    resumed = json.loads((split / "metrics.json").read_text(encoding="utf-8"))
    assert resumed["losses"] == whole["losses"]
    # checked before the data is read
    _fails(capsys, cli.train_main, ["--data", str(tmp_path / "missing.txt"), "--steps",
                                    "10", "--stop-at", "11", "--out", str(tmp_path / "x")],
           "--stop-at (11) must not exceed --steps (10)")


def test_train_never_overwrites_without_force(tmp_path, corpus, capsys):
    out = tmp_path / "run"
    args = ["--data", str(corpus), "--steps", "5", "--out", str(out), *TINY]
    assert cli.train_main(args) == 0
    capsys.readouterr()
    before = (out / "checkpoint.pt").read_bytes()
    _fails(capsys, cli.train_main, args, "already holds a checkpoint", "--force")
    assert (out / "checkpoint.pt").read_bytes() == before
    assert cli.train_main([*args, "--force", "--seed", "1"]) == 0
    assert (out / "checkpoint.pt").read_bytes() != before


def test_train_bpe_tokenizer_is_saved_and_used(tmp_path, corpus, capsys):
    out = tmp_path / "bpe"
    assert cli.train_main(["--data", str(corpus), "--steps", "5", "--out", str(out),
                           "--vocab-size", "300", *TINY]) == 0
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["tokenizer"]["kind"] == "bpe"
    assert config["eos_token_id"] == 256  # the special token follows the bytes
    blob = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    assert len(blob["vocab"]) <= 300 and blob["special_tokens"] == ["<|endoftext|>"]
    capsys.readouterr()
    assert cli.generate_main(["--checkpoint", str(out), "--prompt", "To be",
                              "--max-new-tokens", "5"]) == 0
    assert capsys.readouterr().out.startswith("To be")


def test_train_bad_inputs(tmp_path, corpus, capsys):
    out = str(tmp_path / "run")
    base = ["--out", out, *TINY]
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    short = tmp_path / "short.txt"
    short.write_text("too short", encoding="utf-8")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00abc" * 50)
    cases = [
        (["--data", str(tmp_path / "missing.txt"), "--steps", "5"],
         ["--data", "does not exist"]),
        (["--data", str(tmp_path), "--steps", "5"], ["--data", "is not a file"]),
        (["--data", str(empty), "--steps", "5"], ["--data", "is empty"]),
        (["--data", str(binary), "--steps", "5"], ["--data", "not UTF-8"]),
        (["--data", str(short), "--steps", "5"],
         ["too short for --context-length 16"]),
        (["--data", str(corpus), "--steps", "0"], ["--steps", "positive integer"]),
        (["--data", str(corpus), "--steps", "-2"], ["--steps", "positive integer"]),
        (["--data", str(corpus), "--steps", "many"], ["--steps", "'many'"]),
        (["--data", str(corpus), "--steps", "5", "--device", "tpu"],
         ["--device", "invalid choice"]),
        (["--data", str(corpus), "--steps", "5", "--weight-decay", "-1"],
         ["--weight-decay", "must be a finite number >= 0, got -1"]),
        (["--data", str(corpus), "--steps", "5", "--weight-decay", "nan"],
         ["--weight-decay", "must be a finite number >= 0, got nan"]),
        (["--data", str(corpus), "--steps", "5", "--weight-decay", "a lot"],
         ["--weight-decay", "expected a number >= 0, got 'a lot'"]),
        (["--data", str(corpus), "--steps", "5", "--vocab-size", "100"],
         ["--vocab-size must be at least 256"]),
        (["--data", str(corpus), "--steps", "5", "--d-model", "15"],
         ["--d-model (15) must be divisible by --num-heads (2)"]),
        (["--data", str(corpus), "--steps", "5", "--d-model", "18"],
         ["--d-model / --num-heads must be even (RoPE rotates pairs of dimensions), got 9"]),
        (["--data", str(corpus), "--steps", "5", "--resume"],
         ["--resume", "no checkpoint.pt"]),
        (["--data", str(corpus), "--steps", "5", "--resume", "--force"],
         ["--resume and --force"]),
        (["--steps", "5"], ["--data"]),
    ]
    for argv, needles in cases:
        _fails(capsys, cli.train_main, [*base, *argv], *needles)
    assert not Path(out).exists()  # no failed run left a folder behind



def test_train_never_overwrites_files_it_did_not_write(tmp_path, corpus, capsys,
                                                       monkeypatch):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "config.json").write_text('{"my": "settings"}', encoding="utf-8")
    (out / "metrics.json").write_text("[1, 2, 3]", encoding="utf-8")
    import llmlab.tokenization

    def no_training(*args, **kwargs):
        raise AssertionError("a tokenizer was trained before --out was checked")

    monkeypatch.setattr(llmlab.tokenization, "train_bpe", no_training)
    args = ["--data", str(corpus), "--steps", "5", "--out", str(out), *TINY]
    _fails(capsys, cli.train_main, [*args, "--vocab-size", "300"],
           f"--out {out} is not empty (it holds config.json, metrics.json)",
           "--force")
    # --resume needs a checkpoint that llmlab-train wrote there
    _fails(capsys, cli.train_main, [*args, "--resume"], "--resume",
           "no checkpoint.pt")
    (out / "checkpoint.pt").write_bytes(b"my own weights")
    _fails(capsys, cli.train_main, [*args, "--resume"],
           f"--resume: {out / 'config.json'} was not written by llmlab-train")
    assert (out / "config.json").read_text(encoding="utf-8") == '{"my": "settings"}'
    assert (out / "metrics.json").read_text(encoding="utf-8") == "[1, 2, 3]"
    assert (out / "checkpoint.pt").read_bytes() == b"my own weights"
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint.pt", "config.json",
                                                     "metrics.json"]
    # --force overwrites them; an empty folder needs nothing
    monkeypatch.undo()
    assert cli.train_main([*args, "--force"]) == 0
    assert json.loads((out / "metrics.json").read_text("utf-8"))["iterations"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.train_main([*args[:-len(TINY) - 2], "--out", str(empty), *TINY]) == 0


def test_train_writes_its_header_before_the_progress_bar(tmp_path, corpus, capsys,
                                                         monkeypatch):
    events: list[str] = []

    class Bar:
        def __init__(self, *args, **kwargs):
            events.append("bar")

        def set_postfix(self, *args, **kwargs):
            pass

        def update(self, n=1):
            pass

        def close(self):
            events.append("close")

    monkeypatch.setattr("tqdm.tqdm", Bar)
    real_err = cli._err
    monkeypatch.setattr(cli, "_err", lambda line: (events.append("err"),
                                                   real_err(line)))
    assert cli.train_main(["--data", str(corpus), "--steps", "2", "--out",
                           str(tmp_path / "run"), *TINY]) == 0
    assert events == ["err", "bar", "close"]
    assert capsys.readouterr().err.startswith("llmlab-train: ")


@pytest.mark.parametrize("main", [cli.train_main, cli.generate_main])
def test_help_shows_every_default(main, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    # one entry per option: "  --flag VALUE  help...", continued on indented lines
    entries: list[str] = []
    for line in text.splitlines():
        if line.startswith("  -"):
            entries.append(line.strip())
        elif entries and line.startswith("    "):
            entries[-1] += " " + line.strip()
        elif not line.strip():
            entries.append("")
    takes_value = [e for e in entries if e.startswith("--")
                   and e.split()[1:2] and (e.split()[1].isupper()
                                           or e.split()[1].startswith("{"))]
    required = {"--data", "--steps", "--out", "--checkpoint", "--model", "--prompt"}
    checked = [e for e in takes_value if e.split()[0] not in required]
    assert len(checked) >= (15 if main is cli.train_main else 6), entries
    missing = [e.split()[0] for e in checked if "default" not in e]
    assert missing == [], missing
    # the model sizes say where their value comes from on --resume
    if main is cli.train_main:
        d_model = next(e for e in checked if e.startswith("--d-model"))
        assert "128 for a new run" in d_model and "--resume" in d_model


@pytest.mark.parametrize("device", ["cuda", "mps"])
def test_train_refuses_an_unavailable_device(tmp_path, corpus, capsys, device):
    available = {"cuda": torch.cuda.is_available(),
                 "mps": torch.backends.mps.is_available()}[device]
    if available:
        pytest.skip(f"{device} is available here")
    _fails(capsys, cli.train_main, ["--data", str(corpus), "--steps", "2", "--out",
                                    str(tmp_path / "run"), "--device", device, *TINY],
           f"--device {device} is not available")


def test_train_resume_refuses_another_configuration(tmp_path, corpus, capsys):
    out = tmp_path / "run"
    args = ["--data", str(corpus), "--out", str(out), *TINY]
    assert cli.train_main([*args, "--steps", "5"]) == 0
    capsys.readouterr()
    _fails(capsys, cli.train_main, [*args, "--steps", "8", "--resume",
                                    "--d-model", "32"],
           "--d-model 16, not 32", "another configuration")
    _fails(capsys, cli.train_main, [*args, "--steps", "5", "--resume"],
           "has done 5 steps", "--steps above 5")
    # a config.json that no longer matches the weights
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    config["model"]["num_layers"] = 2
    (out / "config.json").write_text(json.dumps(config), encoding="utf-8")
    _fails(capsys, cli.train_main, ["--data", str(corpus), "--out", str(out),
                                    "--steps", "8", "--resume"],
           "does not fit its config.json", "another configuration")
    _fails(capsys, cli.generate_main, ["--checkpoint", str(out), "--prompt", "To"],
           "does not fit its config.json")


def test_train_a_grouped_query_model_resume_it_and_generate(tmp_path, corpus, capsys):
    out, mha = tmp_path / "gqa", tmp_path / "mha"
    args = ["--data", str(corpus), "--out", str(out), *TINY]  # --num-heads 2
    assert cli.train_main([*args, "--steps", "4", "--num-kv-heads", "1"]) == 0
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["model"]["num_kv_heads"] == 1
    weights = torch.load(out / "checkpoint.pt", weights_only=True)["model"]
    key = next(k for k in weights if k.endswith("k_proj.weight"))
    assert weights[key].shape == (16 // 2, 16)  # one kv head of d_head 8: multi-query
    assert cli.train_main([*args, "--steps", "6", "--resume"]) == 0  # kept, not given
    capsys.readouterr()
    _fails(capsys, cli.train_main, [*args, "--steps", "8", "--resume", "--num-kv-heads",
                                    "2"], "--num-kv-heads 1, not 2", "another configuration")
    assert cli.generate_main(["--checkpoint", str(out), "--prompt", "To", "--greedy",
                              "--max-new-tokens", "5"]) == 0
    assert capsys.readouterr().out.startswith("To")
    # multi-head: no entry in config.json, as before; and a resume may name it
    assert cli.train_main(["--data", str(corpus), "--out", str(mha), *TINY, "--steps", "4",
                           "--num-kv-heads", "2"]) == 0
    assert "num_kv_heads" not in json.loads((mha / "config.json").read_text("utf-8"))["model"]
    assert cli.train_main(["--data", str(corpus), "--out", str(mha), *TINY, "--steps", "6",
                           "--resume", "--num-kv-heads", "2"]) == 0
    capsys.readouterr()
    _fails(capsys, cli.train_main, ["--data", str(corpus), "--out", str(mha), *TINY,
                                    "--steps", "8", "--resume", "--num-kv-heads", "1"],
           "--num-kv-heads 2, not 1", "another configuration")
    _fails(capsys, cli.train_main, ["--data", str(corpus), "--out", str(tmp_path / "x"),
                                    *TINY, "--steps", "2", "--num-kv-heads", "3"],
           "--num-kv-heads (3) must divide --num-heads (2)")


# --- llmlab-generate ----------------------------------------------------------------


def test_generate_continues_the_prompt_reproducibly(trained, capsys):
    args = ["--checkpoint", str(trained), "--prompt", "To be", "--max-new-tokens",
            "20", "--seed", "3"]
    assert cli.generate_main(args) == 0
    first = capsys.readouterr().out
    assert cli.generate_main(args) == 0
    assert capsys.readouterr().out == first and first.startswith("To be")
    assert cli.generate_main([*args, "--no-kv-cache"]) == 0
    assert capsys.readouterr().out == first  # the cache changes nothing
    assert cli.generate_main([*args[:-2], "--greedy"]) == 0
    assert capsys.readouterr().out.startswith("To be")
    assert cli.generate_main(["--checkpoint", str(trained / "checkpoint.pt"),
                              "--prompt", "x", "--top-k", "3", "--top-p", "0.9",
                              "--max-new-tokens", "3"]) == 0
    assert capsys.readouterr().out.startswith("x")


def test_generate_bad_inputs(tmp_path, trained, capsys):
    ok = ["--checkpoint", str(trained), "--prompt", "To"]
    cases = [
        (["--checkpoint", str(tmp_path / "nope"), "--prompt", "x"],
         ["--checkpoint", "does not exist"]),
        (["--checkpoint", str(tmp_path), "--prompt", "x"],
         ["--checkpoint", "holds no checkpoint.pt"]),
        (["--checkpoint", str(trained), "--prompt", ""], ["--prompt is empty"]),
        ([*ok, "--temperature", "0"], ["--temperature", "positive number"]),
        ([*ok, "--temperature", "nan"], ["--temperature", "positive number"]),
        ([*ok, "--temperature", "-1"], ["--temperature"]),
        ([*ok, "--top-k", "0"], ["--top-k", "positive integer"]),
        ([*ok, "--top-k", "300"], ["top_k (300) must be at most vocab_size (256)"]),
        ([*ok, "--top-p", "0"], ["--top-p"]),
        ([*ok, "--top-p", "1.5"], ["--top-p", "(0, 1]"]),
        ([*ok, "--max-new-tokens", "0"], ["--max-new-tokens"]),
        ([*ok, "--device", "tpu"], ["--device", "invalid choice"]),
        (["--prompt", "x"], ["--checkpoint"]),
    ]
    for argv, needles in cases:
        _fails(capsys, cli.generate_main, argv, *needles)



@pytest.mark.parametrize("kind", ["truncated", "empty", "text"])
def test_generate_refuses_a_file_that_is_not_a_checkpoint(tmp_path, trained, capsys,
                                                          kind):
    folder = tmp_path / "run"
    shutil.copytree(trained, folder)
    whole = (folder / "checkpoint.pt").read_bytes()
    content = {"truncated": whole[: len(whole) // 2], "empty": b"",
               "text": b"some notes, not weights\n"}[kind]
    (folder / "checkpoint.pt").write_bytes(content)
    _fails(capsys, cli.generate_main, ["--checkpoint", str(folder), "--prompt", "To"],
           f"{folder / 'checkpoint.pt'} cannot be loaded",
           "is not a checkpoint written by save_checkpoint")


@pytest.mark.parametrize("error", [ValueError("bad value\nmore detail"),
                                   TypeError("bad type"),
                                   FileNotFoundError(2, "No such file", "x.txt")])
def test_library_errors_are_one_line_not_a_traceback(capsys, error):
    def body(argv):
        raise error

    assert cli._run("llmlab-train", body, []) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("llmlab-train: error: ")
    assert str(error).splitlines()[0] in lines[0] and captured.out == ""


# --- the real command line ----------------------------------------------------------


def _command(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "llmlab.cli", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)


def test_command_line_end_to_end(tmp_path, corpus):
    done = _command("train", "--data", str(corpus), "--steps", "5", "--out", "run",
                    *TINY, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "checkpoint: run/checkpoint.pt" in done.stdout
    again = _command("train", "--data", str(corpus), "--steps", "5", "--out", "run",
                     cwd=tmp_path)
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr.strip().count("\n") == 0 and "--force" in again.stderr
    text = _command("generate", "--checkpoint", "run", "--prompt", "The",
                    "--max-new-tokens", "8", cwd=tmp_path)
    assert text.returncode == 0 and text.stdout.startswith("The"), text.stderr


def test_command_line_bad_number_is_one_line(tmp_path, corpus):
    done = _command("train", "--data", str(corpus), "--steps", "5", "--out", "run",
                    "--weight-decay", "-1", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("llmlab-train: error: argument --weight-decay: must be a "
                           "finite number >= 0, got -1\n")
    assert not (tmp_path / "run").exists()


def test_console_scripts_name_the_entry_points():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    scripts = meta["project"]["scripts"]
    assert scripts == {"llmlab-train": "llmlab.cli:train_main",
                       "llmlab-generate": "llmlab.cli:generate_main"}
    for target in scripts.values():
        module, name = target.split(":")
        assert callable(getattr(__import__(module, fromlist=[name]), name))
    assert any(d.startswith("tqdm") for d in meta["project"]["dependencies"])
    assert llmlab.__version__
