#!/usr/bin/env python3
"""Prints the tokenizer parity cases of src/search/embed/tests.rs (`CASES`): for each text, the
words of evaluate.py's `basic_tokenize` and the ids of its `WordPiece` on the shipped table.

    /tmp/emb-venv/bin/python scripts/embeddings/tokenizer_cases.py src/search/embeddings/minilm-l6-v2.q8.bin
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from evaluate import Embedder, basic_tokenize  # noqa: E402

TEXTS = [
    "Create a new issue in a GitHub repository",
    "Café naïve résumé — 東京 émigré\u200b tab\there",
    "don't stop_now:camelCase",
    "ΣΊΣΥΦΟΣ İstanbul ﬁle Å",
    "x" * 120 + " ok",
    "getUserProfile(id) → {name}",
    "안녕하세요 세계",
    "weather forecast for tomorrow",
    "\u0000\ufffd\u00ad soft\u00adhyphen",
    "¿Qué tal? «Ça va» 50% off… 3.14",
]


def rs(s: str) -> str:
    out = []
    for c in s:
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif 32 <= ord(c) < 127:
            out.append(c)
        else:
            out.append(f"\\u{{{ord(c):x}}}")
    return '"' + "".join(out) + '"'


def main() -> None:
    e = Embedder(Path(sys.argv[1]))
    for t in TEXTS:
        words = ", ".join(rs(w) for w in basic_tokenize(t))
        print(f"  ({rs(t)}, &[{words}], &{e.wp.tokenize(t)}),")


if __name__ == "__main__":
    main()
