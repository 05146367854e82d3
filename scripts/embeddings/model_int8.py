#!/usr/bin/env python3
"""Reference reader and forward pass of the int8 "CCBERT01" model file written by
quantize_model.py (the format is specified in that script's docstring). This is what the Rust
side computes; quantize_model.py uses it for the int8-vs-f32 check and model_reference.json.

    OPENBLAS_NUM_THREADS=1 /tmp/emb-venv/bin/python scripts/embeddings/model_int8.py \
        src/search/embeddings/all-minilm-l6-v2.i8.bin "some text" ["another text" ...]

MPNet files (meta "arch": "mpnet") differ in three ways: the specials are meta "cls"/"sep"/"unk"
(`<s>`, `</s>`, `[UNK]`); pos_emb already starts at MPNet's first position (padding_idx + 1); and
a relative attention bias f32[rel_buckets × heads] follows emb_ln, added to every layer's scores
at bucket(j − i) (transformers' MPNetEncoder.relative_position_bucket, `rel_max_distance`).

Pipeline for one text (one sequence, no padding):
  ids = [CLS] wordpiece(text) [SEP], truncated to `cap` (128) ids in total, specials included
        (here: tokenizer.json through the `tokenizers` package, padding off);
  x   = word_q[id] * word_scale[id] + pos_emb[position];  x = LN_emb(x)          (eps 1e-12)
  per layer:  qkv = x Wqkv^T + b  (W = q * row scale; Q rows and bias already carry 1/sqrt(32))
              12 heads of 32: softmax over all tokens of Q K^T (no further scaling), ctx = P V
              x = LN1(ctx Wout^T + b + x);  x = LN2(gelu_erf(x Wffn1^T + b1) Wffn2^T + b2 + x)
  out = mean of x over all tokens (specials included), L2-normalised.
The arithmetic here is float64 on the dequantised f32 weights, so a float32 implementation
should match it to about 1e-6 per dimension.
"""

from __future__ import annotations

import os

os.environ["OPENBLAS_NUM_THREADS"] = os.environ.get("OPENBLAS_NUM_THREADS", "1")

import json
import struct
import sys
from pathlib import Path

import numpy as np
from scipy.special import erf

MAGIC = b"CCBERT01"
CAP = 128


def read_model(path_or_bytes) -> dict:
    """Parses a CCBERT01 file; returns meta, tokens and the tensors (int8 arrays stay int8)."""
    b = path_or_bytes if isinstance(path_or_bytes, (bytes, bytearray)) else Path(path_or_bytes).read_bytes()
    assert b[:8] == MAGIC, b[:8]
    off = 8
    (ml,) = struct.unpack_from("<I", b, off)
    off += 4
    meta = json.loads(b[off : off + ml].decode("utf-8"))
    off += ml
    (vl,) = struct.unpack_from("<I", b, off)
    off += 4
    tokens = b[off : off + vl].decode("utf-8").split("\n")
    assert tokens[-1] == "", "vocab block must end with a newline"
    tokens = tokens[:-1]
    off += vl
    pad = -off % 64
    assert b[off : off + pad] == b"\0" * pad
    off += pad
    assert meta["format"] == "CCBERT01" and len(tokens) == meta["vocab_size"]
    H, F, V, P = meta["hidden"], meta["ffn"], meta["vocab_size"], meta["positions"]

    def take(dtype: str, n: int) -> np.ndarray:
        nonlocal off
        a = np.frombuffer(b, dtype, n, off)
        off += a.nbytes
        return a

    def qlinear(out: int, inp: int) -> dict:
        return {"q": take("i1", out * inp).reshape(out, inp), "s": take("<f4", out), "b": take("<f4", out)}

    def ln() -> dict:
        return {"g": take("<f4", H), "b": take("<f4", H)}

    m = {"meta": meta, "tokens": tokens}
    m["word_q"] = take("i1", V * H).reshape(V, H)
    m["word_s"] = take("<f4", V)
    m["pos"] = take("<f4", P * H).reshape(P, H)
    m["emb_ln"] = ln()
    if meta.get("arch", "bert") == "mpnet":
        m["rel"] = take("<f4", meta["rel_buckets"] * meta["heads"]).reshape(meta["rel_buckets"], meta["heads"])
    m["layers"] = []
    for _ in range(meta["layers"]):
        m["layers"].append({
            "qkv": qlinear(3 * H, H),
            "out": qlinear(H, H),
            "ln1": ln(),
            "ffn1": qlinear(F, H),
            "ffn2": qlinear(H, F),
            "ln2": ln(),
        })
    assert off == len(b), f"{len(b) - off} trailing bytes"
    return m


def _ln(x: np.ndarray, p: dict, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * p["g"].astype(np.float64) + p["b"].astype(np.float64)


def _dense(x: np.ndarray, p: dict) -> np.ndarray:
    """y = s_row * (x . q_row) + bias, in float64."""
    return (x @ p["q"].astype(np.float64).T) * p["s"].astype(np.float64) + p["b"].astype(np.float64)


def forward(m: dict, ids: list[int]) -> np.ndarray:
    """Sentence vector (float64, unit length) of one token-id sequence."""
    meta = m["meta"]
    H, nh, eps = meta["hidden"], meta["heads"], meta["ln_eps"]
    hd = H // nh
    L = len(ids)
    assert 0 < L <= meta["positions"]
    ids = np.asarray(ids)
    word = (m["word_q"][ids].astype(np.float32) * m["word_s"][ids][:, None]).astype(np.float64)  # f32 dequantised rows
    x = _ln(word + m["pos"][:L].astype(np.float64), m["emb_ln"], eps)
    bias = 0.0
    if "rel" in m:
        from distill import mpnet_bucket

        rel = np.arange(L)[None, :] - np.arange(L)[:, None]
        buckets = mpnet_bucket(rel, meta["rel_buckets"], meta["rel_max_distance"])
        bias = m["rel"].astype(np.float64)[buckets].transpose(2, 0, 1)  # (nh, L, L)
    for lay in m["layers"]:
        qkv = _dense(x, lay["qkv"])
        q, k, v = (qkv[:, j * H : (j + 1) * H].reshape(L, nh, hd).transpose(1, 0, 2) for j in range(3))
        s = q @ k.transpose(0, 2, 1) + bias  # (nh, L, L); 1/sqrt(hd) is folded into Q
        s = np.exp(s - s.max(-1, keepdims=True))
        s = s / s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(L, H)
        x = _ln(_dense(ctx, lay["out"]) + x, lay["ln1"], eps)
        h = _dense(x, lay["ffn1"])
        h = 0.5 * h * (1.0 + erf(h / np.sqrt(2.0)))
        x = _ln(_dense(h, lay["ffn2"]) + x, lay["ln2"], eps)
    e = x.mean(0)
    return e / np.linalg.norm(e)


def make_tokenizer(tokenizer_json: bytes, cap: int = CAP):
    """tokenizer.json with padding off and truncation at `cap` ids (specials included)."""
    from tokenizers import Tokenizer

    tk = Tokenizer.from_str(tokenizer_json.decode("utf-8"))
    tk.no_padding()
    tk.enable_truncation(cap)
    return tk


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from distill import MODELS, fetch_model

    m = read_model(sys.argv[1])
    files = fetch_model(MODELS["minilm"], Path(os.environ.get("EMB_CACHE", "/tmp/emb/dl")))
    tk = make_tokenizer(files["tokenizer.json"])
    for t in sys.argv[2:]:
        ids = tk.encode(t).ids
        print(json.dumps({"text": t, "ids": ids, "first8": [round(float(v), 7) for v in forward(m, ids)[:8]]}, ensure_ascii=False))


if __name__ == "__main__":
    main()
