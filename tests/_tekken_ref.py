"""``mistral-common``'s Tekken encode, the reference for the named Tekken encodings (issue 35,
decision 4): its ``Tekkenizer.encode(text, bos=False, eos=False)`` when it imports, else the
same computation written out from its source (``mistral_common/tokens/tokenizers/tekken.py``:
tiktoken on the file's first ``default_vocab_size - default_num_special_tokens`` ranks with
``special_tokens={}``, then every id plus ``default_num_special_tokens``). The test venv
installs ``mistral-common`` with ``--no-deps``, and its ``tekken`` module imports numpy, which
livetok does not need: the written-out form keeps the comparison running there. Neither reads
livetok's own Tekken code."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Callable


def mistral_common_encode(path: Path, *, written_out: bool = False
                          ) -> tuple[Callable[[str], list[int]], str]:
    """``(encode, what)`` for the Tekken file ``path``: ``what`` says which form runs
    (``"Tekkenizer"`` when mistral-common's own class imports and ``written_out`` is false)."""
    why = "the written-out encode, asked for"
    if not written_out:
        try:
            from mistral_common.tokens.tokenizers.tekken import Tekkenizer
        except ImportError as exc:  # numpy or pydantic missing (a --no-deps install)
            why = f"mistral-common's Tekkenizer does not import ({exc}): its encode written out"
        else:
            tk = Tekkenizer.from_file(str(path))
            return (lambda text: list(tk.encode(text, bos=False, eos=False))), "Tekkenizer"
    import tiktoken

    data = json.loads(path.read_bytes())
    cfg = data["config"]
    n_special = int(cfg["default_num_special_tokens"])
    inner = data["vocab"][: int(cfg["default_vocab_size"]) - n_special]
    ranks = {base64.b64decode(x["token_bytes"]): x["rank"] for x in inner}
    model = tiktoken.Encoding(name=path.stem, pat_str=cfg["pattern"], mergeable_ranks=ranks,
                              special_tokens={})
    return (lambda text: [t + n_special for t in model.encode(text)]), why
