#!/usr/bin/env python3
"""Evaluate a CCEMBED1 static-embedding table (distill.py) on the real-tool search benchmark, alone
and fused with the current lexical ranking (lexical-ranks.mjs), on the dev (tune) half.

    node scripts/embeddings/lexical-ranks.mjs /tmp/emb/lexical.json --queries scripts/embeddings/unrelated.json
    /tmp/emb-venv/bin/python scripts/embeddings/evaluate.py /tmp/emb/table.bin --lexical /tmp/emb/lexical.json
        [--test]              also print the test half (do this once, at the end)
        [--check-tokenizer]   compare the runtime tokenizer below with the model's tokenizer.json
        [--model-dir DIR]     (for --check-tokenizer) folder holding tokenizer.json

Split as bench/search/run.mjs: queries.json index even = dev (tune), odd = test.

Runtime embedding, exactly what the Rust side is to implement:
  text -> BERT uncased basic tokenizer:
            drop U+0000, U+FFFD and "other" characters (Unicode C*, except \\t \\n \\r);
            Unicode White_Space -> ' ';
            put spaces around CJK ideographs;
            NFD, drop non-spacing marks (Mn), then lowercase (the order of HF's BertNormalizer);
            split on whitespace; split off every punctuation character (ASCII 33-47, 58-64,
            91-96, 123-126, or Unicode category P*) as its own word
       -> WordPiece per word: greedy longest match from the left, continuation pieces looked up
            with a '##' prefix; a word longer than 100 characters, or with a part that matches
            nothing, is [UNK] and dropped (the whole word)
       -> mean of the dequantised rows of all pieces (a piece counted as often as it occurs)
       -> L2 normalise (no pieces: no vector; the text matches nothing by embedding)
  similarity = dot product of the two unit vectors (cosine).
Tool text = name split into words (':', '_', '-', '.', '/', whitespace, camelCase and
letter/digit boundaries) + title + description + for every input-schema property (nested ones too,
through properties / items / anyOf / oneOf / allOf / $defs): its name split the same way and its
description; joined with ' . '. Queries are embedded as typed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from distill import read_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "search"

# ---------------------------------------------------------------- runtime tokenizer


def _is_control(c: str) -> bool:
    if c in "\t\n\r":
        return False
    return unicodedata.category(c).startswith("C")


def _is_whitespace(c: str) -> bool:
    return c.isspace()  # Unicode White_Space, as Rust's char::is_whitespace


def _is_punct(c: str) -> bool:
    o = ord(c)
    if 33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def _is_cjk(o: int) -> bool:
    return (
        0x4E00 <= o <= 0x9FFF
        or 0x3400 <= o <= 0x4DBF
        or 0x20000 <= o <= 0x2A6DF
        or 0x2A700 <= o <= 0x2B73F
        or 0x2B740 <= o <= 0x2B81F
        or 0x2B820 <= o <= 0x2CEAF
        or 0xF900 <= o <= 0xFAFF
        or 0x2F800 <= o <= 0x2FA1F
    )


def basic_tokenize(text: str) -> list[str]:
    out = []
    for c in text:
        o = ord(c)
        if o == 0 or o == 0xFFFD or _is_control(c):
            continue
        if _is_whitespace(c):
            out.append(" ")
        elif _is_cjk(o):
            out.append(f" {c} ")
        else:
            out.append(c)
    text = "".join(c for c in unicodedata.normalize("NFD", "".join(out)) if unicodedata.category(c) != "Mn")
    text = text.lower()
    words = []
    for w in text.split():
        cur = ""
        for c in w:
            if _is_punct(c):
                if cur:
                    words.append(cur)
                    cur = ""
                words.append(c)
            else:
                cur += c
        if cur:
            words.append(cur)
    return words


class WordPiece:
    def __init__(self, tokens: list[str]):
        self.ids = {t: i for i, t in enumerate(tokens)}
        self.max_len = max(len(t) for t in tokens)

    def word(self, w: str) -> list[int] | None:
        if len(w) > 100:
            return None
        pieces, start = [], 0
        while start < len(w):
            end = min(len(w), start + self.max_len)
            found = None
            while end > start:
                sub = w[start:end] if start == 0 else "##" + w[start:end]
                if sub in self.ids:
                    found = self.ids[sub]
                    break
                end -= 1
            if found is None:
                return None
            pieces.append(found)
            start = end
        return pieces

    def tokenize(self, text: str) -> list[int]:
        ids = []
        for w in basic_tokenize(text):
            p = self.word(w)
            if p is not None:
                ids.extend(p)
        return ids


def split_identifier(name: str) -> str:
    s = re.sub(r"[:_\-./\s]+", " ", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", s)
    s = re.sub(r"([A-Z])([A-Z][a-z])", r"\1 \2", s)
    s = re.sub(r"([A-Za-z])([0-9])", r"\1 \2", s)
    s = re.sub(r"([0-9])([A-Za-z])", r"\1 \2", s)
    return s.strip()


def schema_fields(schema, out: list[str], depth: int = 0) -> None:
    if not isinstance(schema, dict) or depth > 8:
        return
    props = schema.get("properties")
    if isinstance(props, dict):
        for k, v in props.items():
            out.append(split_identifier(k))
            if isinstance(v, dict) and isinstance(v.get("description"), str):
                out.append(v["description"])
            schema_fields(v, out, depth + 1)
    items = schema.get("items")
    if isinstance(items, dict):
        schema_fields(items, out, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list):
            for s in schema[key]:
                schema_fields(s, out, depth + 1)
    defs = schema.get("$defs")
    if isinstance(defs, dict):
        for s in defs.values():
            schema_fields(s, out, depth + 1)


def tool_text(t: dict, params: bool = True, title: bool = True) -> str:
    parts = [split_identifier(t["name"])]
    ttl = t.get("title") or (t.get("annotations") or {}).get("title")
    if title and ttl:
        parts.append(ttl)
    if t.get("description"):
        parts.append(t["description"])
    if params:
        schema_fields(t.get("inputSchema") or {}, parts)
    return " . ".join(p for p in parts if p)


class Embedder:
    def __init__(self, table: Path, drop_punct: bool = False):
        self.tokens, self.E, self.meta = read_table(table)
        self.wp = WordPiece(self.tokens)
        self.idf = None
        self.drop = np.array([len(t) == 1 and _is_punct(t) for t in self.tokens]) if drop_punct else None

    def embed(self, text: str) -> np.ndarray | None:
        ids = self.wp.tokenize(text)
        if self.drop is not None:
            ids = [i for i in ids if not self.drop[i]]
        if not ids:
            return None
        if self.idf is not None:
            v = (self.E[ids] * self.idf[ids, None]).sum(axis=0)
        else:
            v = self.E[ids].mean(axis=0)
        n = np.linalg.norm(v)
        return v / n if n > 0 else None


# ---------------------------------------------------------------- evaluation


def load():
    corpus = json.loads((BENCH / "corpus.json").read_text())
    queries = json.loads((BENCH / "queries.json").read_text())["queries"]
    tools = [dict(t, id=f"{t['appId']}:{t['name']}") for t in corpus["tools"]]
    return tools, queries


def metrics(ranked: list[list[str]], qs: list[dict]) -> dict:
    r1 = r5 = mrr = 0.0
    for ids, q in zip(ranked, qs):
        rank = next((i + 1 for i, x in enumerate(ids[:10]) if x in q["expected"]), 0)
        r1 += rank == 1
        r5 += 1 <= rank <= 5
        mrr += 1 / rank if rank else 0
    n = max(1, len(qs))
    return {"n": len(qs), "r1": r1 / n, "r5": r5 / n, "mrr": mrr / n}


def groups(qs: list[dict]) -> dict[str, list[int]]:
    g = defaultdict(list)
    for i, q in enumerate(qs):
        g["all"].append(i)
        for t in q.get("tags") or []:
            g[t].append(i)
        if not q.get("tags"):
            g["untagged"].append(i)
    return g


def report(title: str, systems: dict[str, list[list[str]]], qs: list[dict]) -> None:
    g = groups(qs)
    print(f"\n### {title}\n")
    print("| system | group | n | recall@1 | recall@5 | MRR@10 |")
    print("|---|---|---:|---:|---:|---:|")
    for name, ranked in systems.items():
        for gname in ["all", "paraphrase", "exact", "typo", "filter", "multi", "untagged"]:
            idx = g.get(gname, [])
            if not idx:
                continue
            m = metrics([ranked[i] for i in idx], [qs[i] for i in idx])
            print(f"| {name} | {gname} | {m['n']} | {m['r1']:.3f} | {m['r5']:.3f} | {m['mrr']:.3f} |")


class Runner:
    """Holds the embeddings of one table and ranks queries by cosine, lexical, and fusions."""

    def __init__(self, emb: Embedder, tools: list[dict], lexical: list[dict] | None, idf: bool = False, **text_opts):
        self.tools = tools
        self.ids = [t["id"] for t in tools]
        self.app = np.array([t["appId"] for t in tools])
        if idf:  # experiment: weight pieces by their IDF over the indexed tool texts
            df = np.zeros(len(emb.tokens))
            for t in tools:
                df[list(set(emb.wp.tokenize(tool_text(t, **text_opts))))] += 1
            emb.idf = np.log((len(tools) + 1) / (df + 1)).astype(np.float32) + 1
        vecs = [emb.embed(tool_text(t, **text_opts)) for t in tools]
        dim = emb.E.shape[1]
        self.T = np.stack([v if v is not None else np.zeros(dim, np.float32) for v in vecs])
        self.emb = emb
        self.lex = {(q["query"], tuple(q["appIds"] or [])): q["hits"] for q in lexical} if lexical else {}

    def cos(self, q: dict) -> np.ndarray:
        v = self.emb.embed(q["query"])
        c = self.T @ v if v is not None else np.zeros(len(self.ids), np.float32)
        if q.get("appIds"):
            c = np.where(np.isin(self.app, q["appIds"]), c, -np.inf)
        return c

    def emb_rank(self, q: dict, k: int = 50) -> list[str]:
        c = self.cos(q)
        order = np.argsort(-c, kind="stable")[:k]
        return [self.ids[i] for i in order if np.isfinite(c[i])]

    def lex_hits(self, q: dict) -> list[dict]:
        return self.lex[(q["query"], tuple(q.get("appIds") or []))]

    def fuse(self, q: dict, mode: str, **p) -> list[tuple[str, float]]:
        """Returns (id, fused score) best first, after the no-match rule."""
        c = self.cos(q)
        hits = self.lex_hits(q)
        lex = {h["name"]: h["score"] for h in hits}
        lex_rank = {h["name"]: r + 1 for r, h in enumerate(hits)}
        tau = p.get("tau", -1.0)
        order = np.argsort(-c, kind="stable")
        emb_rank = {self.ids[i]: r + 1 for r, i in enumerate(order[:50]) if np.isfinite(c[i])}
        idx = {t: i for i, t in enumerate(self.ids)}
        cand = set(lex) | set(emb_rank)
        out = []
        for t in cand:
            ct = float(c[idx[t]])
            # no-match rule: a tool the lexical index did not return counts only above tau
            if t not in lex and ct < tau:
                continue
            if mode == "rrf":
                k, w = p["k"], p["w"]
                s = (1 / (k + lex_rank[t]) if t in lex_rank else 0) + (
                    w / (k + emb_rank[t]) if t in emb_rank and ct >= tau else 0
                )
            elif mode == "blend":
                a = p["a"]
                cn = max(0.0, (ct - tau) / (1 - tau)) if tau > -1 else (ct + 1) / 2
                s = (1 - a) * lex.get(t, 0.0) + a * cn
            else:
                raise ValueError(mode)
            out.append((t, s))
        out.sort(key=lambda x: (-x[1], x[0]))
        return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("table", type=Path)
    ap.add_argument("--lexical", type=Path, default=Path("/tmp/emb/lexical.json"))
    ap.add_argument("--unrelated", type=Path, default=Path(__file__).parent / "unrelated.json")
    ap.add_argument("--test", action="store_true")
    ap.add_argument("--check-tokenizer", action="store_true")
    ap.add_argument("--model-dir", type=Path, default=Path("/tmp/emb/dl/minilm/model"))
    ap.add_argument("--no-params", action="store_true")
    ap.add_argument("--no-title", action="store_true")
    ap.add_argument("--drop-punct", action="store_true")
    ap.add_argument("--idf", action="store_true", help="experiment: IDF-weighted pooling instead of the mean")
    ap.add_argument("--emb-only", action="store_true")
    ap.add_argument("--rrf", default=None, help="k,w of the reported RRF config (default: best on dev)")
    ap.add_argument("--blend", default=None, help="a,tau of the reported blend config (default: best on dev)")
    args = ap.parse_args()

    tools, queries = load()
    emb = Embedder(args.table, drop_punct=args.drop_punct)
    if args.check_tokenizer:
        check_tokenizer(emb, tools, queries, args.model_dir)
    lexical = json.loads(args.lexical.read_text())["queries"] if args.lexical.exists() else None
    run = Runner(emb, tools, lexical, idf=args.idf, params=not args.no_params, title=not args.no_title)
    dev = [q for i, q in enumerate(queries) if i % 2 == 0]
    test = [q for i, q in enumerate(queries) if i % 2 == 1]
    unrelated = [{"query": u, "expected": [], "appIds": None} for u in json.loads(args.unrelated.read_text())]
    print(f"table {args.table}: {len(emb.tokens)} rows x {emb.E.shape[1]} dims; {len(tools)} tools; dev {len(dev)} test {len(test)}")

    systems = {"embedding": [run.emb_rank(q) for q in dev]}
    if lexical and not args.emb_only:
        systems["lexical"] = [[h["name"] for h in run.lex_hits(q)] for q in dev]
    report("dev half", systems, dev)
    if not lexical or args.emb_only:
        return

    # Where do the right tools and the unrelated queries sit in cosine?
    best_right = [max(float(run.cos(q)[run.ids.index(e)]) for e in q["expected"]) for q in dev]
    top_unrel = [float(np.max(run.cos(u))) for u in unrelated]
    print(f"\ndev: cosine of the right tool: p10 {np.percentile(best_right, 10):.3f} median {np.median(best_right):.3f}")
    print(f"unrelated queries: top cosine max {max(top_unrel):.3f} median {np.median(top_unrel):.3f}")

    # --- tuning on dev
    def dev_mrr(mode, **p):
        return metrics([[t for t, _ in run.fuse(q, mode, **p)] for q in dev], dev)

    def unrelated_extra(mode, **p):
        """Embedding-only hits the unrelated queries gain over the lexical index (the rule wants 0)."""
        return sum(len(run.fuse(u, mode, **p)) - len(run.lex_hits(u)) for u in unrelated)

    results = []
    taus = (0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65)
    for tau in taus:
        for k in (2, 5, 10, 20, 60):
            for w in (0.25, 0.5, 0.75, 1.0, 1.5):
                p = dict(k=k, w=w, tau=tau)
                results.append(("rrf", p, dev_mrr("rrf", **p), unrelated_extra("rrf", **p)))
        for a in (0.02, 0.035, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5):
            p = dict(a=a, tau=tau)
            results.append(("blend", p, dev_mrr("blend", **p), unrelated_extra("blend", **p)))
    results.sort(key=lambda r: (-r[2]["mrr"], -r[2]["r1"], -r[1]["tau"]))
    print("\n### best fusions on dev (MRR@10); extra = embedding-only hits the 12 unrelated queries gain\n")
    for mode, p, m, extra in results[:12]:
        print(f"{mode} {p}: r1 {m['r1']:.3f} r5 {m['r5']:.3f} mrr {m['mrr']:.3f} extra {extra}")
    # keep only configs under which no unrelated query gains a hit, then the best per mode
    results = [r for r in results if r[3] == 0]
    for mode in ("rrf", "blend"):
        best = next(r for r in results if r[0] == mode)
        print(f"best {mode} with the no-match rule held: {best[1]} -> {best[2]}")

    chosen = []
    if args.rrf:
        k, w, tau = (float(x) for x in args.rrf.split(","))
        chosen.append(("rrf", dict(k=k, w=w, tau=tau)))
    if args.blend:
        a, tau = (float(x) for x in args.blend.split(","))
        chosen.append(("blend", dict(a=a, tau=tau)))
    if not chosen:
        chosen = [next((r[0], r[1]) for r in results if r[0] == m) for m in ("rrf", "blend")]
    if lexical:
        lex_dev = [[h["name"] for h in run.lex_hits(q)] for q in dev]
    for mode, p in chosen:
        fused_dev = [[t for t, _ in run.fuse(q, mode, **p)] for q in dev]
        report(f"dev half: {mode} {p}", {"fused": fused_dev}, dev)
        print("\nunrelated queries under this config (hits after the rule, top):")
        for u in unrelated:
            lexfused = run.fuse(u, mode, **p)
            print(f"  {u['query']!r}: {len(lexfused)} hits, lexical {len(run.lex_hits(u))}, top {lexfused[:1]}")
        kept = sum(1 for q in dev if run.fuse(q, mode, **p))
        print(f"dev queries with at least one hit: {kept}/{len(dev)}")
        if args.test:
            systems = {
                "lexical": [[h["name"] for h in run.lex_hits(q)] for q in test],
                "embedding": [run.emb_rank(q) for q in test],
                "fused": [[t for t, _ in run.fuse(q, mode, **p)] for q in test],
            }
            report(f"TEST half: {mode} {p}", systems, test)


def check_tokenizer(emb: Embedder, tools, queries, model_dir: Path) -> None:
    from tokenizers import Tokenizer

    tk = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tk.no_padding()
    tk.no_truncation()
    unk = tk.token_to_id(tk.model.unk_token)
    texts = [tool_text(t) for t in tools] + [q["query"] for q in queries]
    texts += ["Café naïve résumé — 東京 émigré\u200b tab\there", "x" * 120 + " ok", "don't stop_now:camelCase"]
    bad = 0
    for s in texts:
        ref = [tk.id_to_token(i) for i in tk.encode(s, add_special_tokens=False).ids if i != unk]
        ours = [emb.tokens[i] for i in emb.wp.tokenize(s)]
        if ref != ours:
            bad += 1
            if bad <= 3:
                print("tokenizer mismatch:", s[:80], ref[:20], ours[:20])
    print(f"tokenizer check: {len(texts) - bad}/{len(texts)} texts tokenised identically to tokenizer.json ([UNK] removed)")


if __name__ == "__main__":
    main()
