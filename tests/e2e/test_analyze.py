"""``livetok analyze`` on the paper's dictionaries reports what the paper says about them."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from livetok.server import cmd_analyze

DICTS = Path(__file__).parents[1] / "data" / "dicts"


def analyze(target: str | Path, *extra: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser()
    cmd_analyze.add_parser(parser.add_subparsers())
    args = parser.parse_args(["analyze", str(target), *extra])
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = cmd_analyze.run(args)
    return rc, buf.getvalue()


def test_example_1_a_bc_is_never_useful() -> None:
    rc, out = analyze(DICTS / "example1.txt")
    assert rc == 0
    assert "never useful (Corollary 1, SentencePiece): 2 (a ⋄ bc)" in out
    assert "never useful (Corollary 1, HuggingFace): 2 (a ⋄ bc)" in out


def test_example_2_is_improper_and_semantics_differ() -> None:
    rc, out = analyze(DICTS / "example2.txt")
    assert "proper (Definition 5): no" in out
    assert "rule 1: right token 'ab': only rule 3 (lower priority) produces it" in out
    assert "SP vs HF (Lemma 1): differ on 'abcab': SP abc ⋄ ab, HF ab ⋄ cab" in out
    assert "lookahead (Theorem 2): does not apply" in out


def test_example_3_sp_and_hf_differ() -> None:
    rc, out = analyze(DICTS / "example3.txt")
    assert "proper (Definition 5): no" in out
    assert "rule 1: left token 'ab': only rule 2 (lower priority) produces it" in out
    assert "SP vs HF (Lemma 1): differ on 'abab': SP aba ⋄ b, HF ab ⋄ ab" in out


def test_example_4_chain_is_the_whole_dictionary() -> None:
    rc, out = analyze(DICTS / "example4.txt")
    assert "proper (Definition 5): yes" in out
    assert "SP vs HF (Lemma 1): always equal, the dictionary is proper" in out
    assert "chain length (Remark 5): c(D) <= 4 (|D| = 4)" in out
    assert "l(D) <= 20 symbols (Definition 7's sufficient lookahead: 20)" in out


@pytest.mark.parametrize("name", ["remark5.txt", "remark5_swapped.txt"])
def test_remark_5_chain_bound_is_two(name) -> None:
    rc, out = analyze(DICTS / name)
    assert "chain length (Remark 5): c(D) <= 2 (|D| = 3)" in out
    assert "l(D) <= 8 symbols (Definition 7's sufficient lookahead: 12)" in out


def test_proper_but_not_useful() -> None:
    rc, out = analyze(DICTS / "proper_not_useful.txt")
    assert "proper (Definition 5): yes" in out
    assert "never useful (Corollary 1, SentencePiece): 4 (ab ⋄ cd)" in out


def test_bad_file_is_an_error_with_a_fix(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("a b\nabc\n")
    rc, _ = analyze(bad)
    assert rc == 2
    assert "two tokens separated by a space" in capsys.readouterr().err


def test_trained_sentencepiece_model(tmp_path) -> None:
    spm = pytest.importorskip("sentencepiece")
    from livetok.incremental.analysis import corpus

    lines = [ln for ln in corpus.stdlib_texts().__next__().splitlines() + list(corpus.trace_texts()[:1]) if ln.strip()]
    model = tmp_path / "tiny.model"
    with model.open("wb") as f:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines), model_writer=f, model_type="bpe", vocab_size=400,
            normalization_rule_name="identity", remove_extra_whitespaces=False, minloglevel=2,
        )
    rc, out = analyze(model)
    assert rc == 0, out
    assert out.startswith("vocabulary tiny:")
    assert "never useful rules (Corollary 1):" in out
    assert "unreachable pieces" in out


def test_cli_entry_point_registers_analyze() -> None:
    cli = pytest.importorskip("livetok.server.cli")
    proc = subprocess.run(
        [sys.executable, "-m", "livetok.server.cli", "analyze", str(DICTS / "example3.txt")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "differ on 'abab'" in proc.stdout
    del cli
