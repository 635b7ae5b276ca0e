"""``livetok analyze`` on the paper's dictionaries reports what the paper says about them."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from livetok.server.cli import analyze as cmd_analyze

from .._tokenizer_files import tokenizer_file

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


@pytest.mark.parametrize("cut", range(1, 4))
def test_utf8_rule_file_cut_inside_a_character_is_a_rule_file(tmp_path, cut) -> None:
    """A UTF-8 rule file whose first 64 bytes end inside a multi-byte character is still
    read as rules, not taken for a SentencePiece .model file ("unsupported protobuf wire
    type"): the sniff tolerates a character the cut splits."""
    # the 64th byte is the cut-th of the 3 bytes of "⋄" (cut 3: the character ends there)
    comment = "# " + "x" * (64 - 2 - cut)
    rules = tmp_path / "rules.txt"
    rules.write_text(f"{comment}⋄ is the merge symbol\na b\nab c\n", encoding="utf-8")
    assert rules.read_bytes()[:64].endswith("⋄".encode()[:cut])
    rc, out = analyze(rules)
    assert rc == 0, out
    assert out.startswith(f"dictionary {rules}")
    assert "proper (Definition 5): yes" in out


def test_binary_head_is_still_a_model_file(tmp_path) -> None:
    """The other way round: bytes that no UTF-8 text starts with mean a .model file."""
    from livetok.server.cli.analyze import _is_model_file

    blob = tmp_path / "vocab.bin"
    blob.write_bytes(b"\x0a\x0b\x0a\x05<unk>\x15\xff\xfe" + b"a" * 80)
    assert _is_model_file(blob)
    short = tmp_path / "short.txt"  # a file shorter than the sniff that ends mid-character
    short.write_bytes("a b\n⋄".encode()[:-1])
    assert _is_model_file(short)


def test_trained_sentencepiece_model(tmp_path) -> None:
    spm = pytest.importorskip("sentencepiece")
    from livetok.incremental.samples import corpora as corpus

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
    cli = pytest.importorskip("livetok.server.cli.main")
    proc = subprocess.run(
        [sys.executable, "-m", "livetok.server.cli.main", "analyze", str(DICTS / "example3.txt")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "differ on 'abab'" in proc.stdout
    del cli


# --- tokenizer.json (issue 17) ---------------------------------------------------------------


def _tokenizer_json(tmp_path: Path, rules: list[tuple[str, str]], *, byte_level: bool = False,
                    name: str = "tokenizer.json") -> Path:
    toks = dict.fromkeys([*(c for u, v in rules for c in u + v),
                          *(t for u, v in rules for t in (u, v, u + v))])
    pre = ({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
            "use_regex": False} if byte_level else None)
    data = {"version": "1.0", "pre_tokenizer": pre,
            "model": {"type": "BPE", "vocab": {t: i for i, t in enumerate(toks)},
                      "merges": [" ".join(r) for r in rules]}}
    f = tmp_path / name
    f.write_text(json.dumps(data), encoding="utf-8")
    return f


def test_tokenizer_json_proper(tmp_path) -> None:
    rc, out = analyze(_tokenizer_json(tmp_path, [("a", "b"), ("ab", "c")]))
    assert rc == 0
    assert out.splitlines()[0].endswith(
        "model BPE; 5 vocabulary entries; 2 merges, the dictionary's rules in priority order "
        "(Definition 1); max |uv| = 3")
    assert "proper (Definition 5): yes" in out
    assert "SP vs HF (Lemma 1): always equal, the dictionary is proper" in out
    assert "Definition 3 over the merge ranks, not Definition 4" in out


def test_tokenizer_json_improper_but_useful_rules_proper(tmp_path) -> None:
    rc, out = analyze(_tokenizer_json(tmp_path, [("a", "b"), ("a", "bc"), ("b", "c"), ("ab", "c")]))
    assert rc == 0
    assert "proper (Definition 5): no: 1 rule tokens" in out
    assert "  rule 2 ('a' ⋄ 'bc'): right token 'bc': only rule 3 (lower priority) produces it" in out
    assert ("never useful (Corollary 1): 1 of 4 rules are never applied (SentencePiece, "
            "Definition 3); HuggingFace (Definition 4) applies none of them") in out
    assert "useful rules only (3): proper (Definition 5)" in out
    assert "SP vs HF (Lemma 1): always equal: the rules ever applied form a proper" in out


def test_tokenizer_json_witness(tmp_path) -> None:
    rc, out = analyze(_tokenizer_json(tmp_path, [("c", "ab"), ("ab", "c"), ("a", "b")]))
    assert rc == 0
    assert "SP vs HF (Lemma 1): differ on 'abcab' (5 symbols): SP 'abc' ⋄ 'ab', HF 'ab' ⋄ 'cab'" in out


def test_tokenizer_json_byte_level_witness_shows_bytes(tmp_path) -> None:
    rc, out = analyze(_tokenizer_json(tmp_path, [("Ġa", "Ġ"), ("Ġ", "a")], byte_level=True))
    assert rc == 0
    assert "GPT-2's byte-to-unicode characters" in out
    assert ("differ on 'ĠaĠa' (bytes b' a a') (4 symbols): SP 'ĠaĠ' ⋄ 'a', HF 'Ġa' ⋄ 'Ġa'"
            in out)


def test_tokenizer_json_errors_are_one_line(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}')
    rc, _ = analyze(bad)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert err.startswith(f"livetok analyze: {bad}: model.merges[0] 'a' 'b': 'b' is not in "
                          "model.vocab")
    broken = tmp_path / "broken.json"
    broken.write_text('{"model": ')
    rc, _ = analyze(broken)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "not a JSON tokenizer.json" in err


@pytest.mark.parametrize("name, kind", [("bert", "WordPiece"), ("xlmr", "Unigram")])
def test_real_non_bpe_files_say_the_question_does_not_apply(name, kind) -> None:
    rc, out = analyze(tokenizer_file(name))
    assert rc == 0
    assert f"merge semantics (Definitions 3-5, Lemma 1): do not apply: a {kind} model" in out
    assert len(out.splitlines()) == 2


# slow: "proper: yes" is test_tokenizer_json_proper's in the default run, and real files are
# analysed there by the Llama 2 and Llama 3 tests below
@pytest.mark.slow
def test_real_qwen3_is_proper() -> None:
    rc, out = analyze(tokenizer_file("qwen3"))
    assert rc == 0
    assert "151,387 merges" in out and "proper (Definition 5): yes" in out


def test_real_llama2_useful_rules_are_proper() -> None:
    rc, out = analyze(tokenizer_file("llama2"))
    assert rc == 0, out
    assert "proper (Definition 5): no: 10,601 rule tokens" in out
    assert "never useful (Corollary 1): 30,534 of 58,980 rules" in out
    assert "useful rules only (28,446): proper (Definition 5)" in out
    assert "SP vs HF (Lemma 1): always equal: the rules ever applied" in out


def test_real_llama3_bounded_stops_with_what_it_had_shown(capsys) -> None:
    rc, out = analyze(tokenizer_file("llama3"), "--max-steps", "200000")
    err = capsys.readouterr().err
    assert rc == 2
    assert "proper (Definition 5): no: 51,651 rule tokens" in out
    assert err.startswith(f"livetok analyze: {tokenizer_file('llama3')}: stopped after 200,000 "
                          "steps while checking which rules are useful (Corollary 1, "
                          "SentencePiece): ")
    assert err.count("\n") == 1
