#!/usr/bin/env python3
"""tokenizer_gen.py - oracle data for layad's tokenizer (run through scripts/tokenizer-gen).

  gemma OUT.json            build the mmBERT/Gemma-like tokenizer.json with HF `tokenizers`
  corpus FAMILY TOK.json FULL.jsonl FIXTURE.jsonl [N [VARIANT]]
                            write N (default 10000) strings with the HF ids of
                            Tokenizer.from_file(TOK).encode(s, add_special_tokens=False),
                            all of them to FULL, a small representative subset to FIXTURE;
                            with VARIANT, TOK is first patched by that entry of
                            tests/fixtures/tokenizer/variants.json (see apply_variant)

Every line of a corpus file is {"cat": category, "text": string, "ids": [..]}.
Strings are deterministic per family (seeded), so the committed fixtures and the
full corpus agree. Characters are drawn from code points assigned in Unicode
14.0 (Python's unicodedata here, also PCRE2 10.42's tables), plus the planes that
are unassigned in every Unicode version (4-13) and private use (15-16): a code
point first assigned in Unicode 15/16 has no category in PCRE2 10.42, which is a
known limit of the C side (see model/tokenizer_pretok.c), not a thing to sample.
"""
import json
import random
import sys
import unicodedata

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

# ---- text generators ----------------------------------------------------------

WORDS = ("the of and to in is was for on that with as by at from this be are have not it or an "
         "refund invoice billing payment charged twice customer support urgent outage login password "
         "account order shipping delivery cancel subscription technical error failed service offline "
         "question choice score level statement department team which how what request message user "
         "assistant calm firm angry frustrated critical option select other software faults hello "
         "please thanks today yesterday week month money back data model decision probability answer "
         "escalate agent ticket priority don't it's we're they've I'm you'll she'd can't O'Neil "
         "internationalization antidisestablishmentarianism naïve café résumé Zürich São Paulo").split()

SPECIALS = ["[MASK]", "[CLS]", "[SEP]", "[PAD]", "[UNK]", "|||IP_ADDRESS|||", "|||EMAIL_ADDRESS|||",
            "|||PHONE_NUMBER|||", "<|padding|>", "<|endoftext|>", "<pad>", "<eos>", "<bos>", "<unk>",
            "<mask>", "<start_of_turn>", "<end_of_turn>", "New York", "hello", "<rs>", "<ls>",
            "[mask]", "[MASK", "MASK]", "[[MASK]]", "|||IP_ADDRESS||", "<0x41>", "<0xZZ>", "▁", "▁▁"]

WS = [" ", "  ", "   ", "\t", "\n", "\r\n", "\r", " \t ", "\n\n", "\u00a0", "\u3000", "\u2028",
      "\u2003", "\u000b", "\u000c", "\u0085", "\u200b", "\u180e", "\ufeff", " " * 7, " " * 30, "\t\t\n "]

# added-token edge cases (they matter most for the tiny-added-edge variant's tokens)
FIXED_ADDED = ["a [MASK] b", "x<r>   y", "a <lr>  b", "a <lr>b", "<lr>", "  <lr>  ", "word xword wordx (word)",
               "wörd", "wördy", "_word", "word_", "word\u0301", "café", "cafe\u0301", "cafe\u0301x", "abcd",
               "xabcdx", "abcabc", "a  b   c    d", "\u212b", "A\u030a", "x y", "a  x y", "ax y", "[CLS]  z",
               "[CLS][CLS]", "dup dup", "the theme", "[MASK][MASK]", "  [MASK]", "\t[MASK]", "\u3000[MASK]",
               "<r><r> <r>", "|||IP_ADDRESS||||||IP_ADDRESS|||", "[MASK]\u00a0", "word\u200dword"]

CJK_RANGES = [(0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7A3), (0x3000, 0x303F),
              (0xFF00, 0xFFEF), (0x20000, 0x2A6DF)]
ARABIC = [(0x0600, 0x06FF), (0x0750, 0x077F)]
DEVANAGARI = [(0x0900, 0x097F)]
OTHER_SCRIPTS = [(0x0E00, 0x0E7F), (0x0590, 0x05FF), (0x0400, 0x04FF), (0x0370, 0x03FF), (0x10A0, 0x10FF),
                 (0x0B80, 0x0BFF), (0x1780, 0x17FF), (0x0F00, 0x0FFF), (0x1200, 0x137F)]
EMOJI = ["😀", "👍", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇩🇪", "🇯🇵", "1️⃣", "❤️", "🧑🏿‍🚀", "🤷‍♀️",
         "👋🏻", "✋🏾", "🫶", "🦄", "🐕‍🦺", "⚠️", "☕", "🇺🇳", "#️⃣", "👁️‍🗨️", "🧔🏽‍♂️", "💁🏼‍♀️"]
COMBINING = [0x0300, 0x0301, 0x0302, 0x0303, 0x0308, 0x030A, 0x0323, 0x0327, 0x0328, 0x031B, 0x0345,
             0x05B4, 0x093C, 0x094D, 0x0E48, 0x1DC0, 0x20D7, 0x302A, 0x3099, 0x309A, 0x0F71, 0x0F72]
NFC_CASES = ["e\u0301", "a\u0323\u0302", "a\u0302\u0323", "\u1100\u1161\u11a8", "\u1100\u1161",
             "\u212b", "\u2126", "\u0958", "\u00c5", "A\u030a", "\u0041\u0301\u0316", "o\u0328\u0304",
             "\u0915\u093c", "\u09c7\u09be", "\u0b47\u0b56", "\u1e0b\u0323", "\u1e9b\u0323", "ﬁ", "Ⅻ",
             "\u0344", "\u0f73", "\u2000", "\u304b\u3099", "\u30cf\u309a", "\uac00\u11a8", "\u0340",
             "\u00e9\u0301", "u\u0308\u0301", "\u0391\u0313\u0301\u0345", "\u1fbc", "\u01c4", "\u0387"]


def assigned_ranges():
    """Assigned code points (Unicode 14.0 via Python) per plane, excluding surrogates."""
    per_plane = {}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        plane = cp >> 16
        cat = unicodedata.category(chr(cp))
        if plane in (4, 5, 6, 7, 8, 9, 10, 11, 12, 13):
            if cp & 0xFFF == 0x123:  # a few permanently unassigned samples per plane
                per_plane.setdefault(plane, []).append(cp)
            continue
        if cat == "Cn":
            if (cp & 0xFFFE) == 0xFFFE or 0xFDD0 <= cp <= 0xFDEF:  # noncharacters
                per_plane.setdefault(plane, []).append(cp)
            continue
        if plane in (15, 16) and cp & 0xFF != 0x42:
            continue  # private use: a sample is enough
        per_plane.setdefault(plane, []).append(cp)
    return per_plane


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.planes = assigned_ranges()
        self.all_cps = [cp for v in self.planes.values() for cp in v]

    def word(self):
        w = self.r.choice(WORDS)
        x = self.r.random()
        if x < 0.1:
            w = w.capitalize()
        elif x < 0.13:
            w = w.upper()
        return w

    def prose(self, n=None):
        n = n or self.r.randint(1, 40)
        out = []
        for i in range(n):
            out.append(self.word())
            if self.r.random() < 0.12:
                out[-1] += self.r.choice([",", ".", "!", "?", ";", ":", "...", ")", "\"", "'s", "'re", "'ll", "'D"])
        s = " ".join(out)
        if self.r.random() < 0.5:
            s = s[:1].upper() + s[1:] + "."
        return s

    def json_doc(self):
        def val(d):
            k = self.r.random()
            if d > 2 or k < 0.3:
                return self.r.choice([self.r.randint(-10**9, 10**9), round(self.r.uniform(-1e4, 1e4), self.r.randint(0, 6)),
                                      True, False, None, self.prose(self.r.randint(1, 6)), self.mixed_unicode(5)])
            if k < 0.6:
                return [val(d + 1) for _ in range(self.r.randint(0, 4))]
            return {self.word() + str(self.r.randint(0, 99)): val(d + 1) for _ in range(self.r.randint(0, 5))}
        doc = {"state": val(0), "user": self.prose(5), "n": self.r.randint(0, 1000)}
        return json.dumps(doc, ensure_ascii=self.r.random() < 0.3,
                          indent=self.r.choice([None, None, 1, 2, 4, "\t"]),
                          separators=self.r.choice([None, (",", ":"), (", ", ": ")]))

    def code(self):
        ident = lambda: self.r.choice(["x", "buf", "n_items", "tokenizer_encode", "CamelCase", "__init__",
                                       "i", "ptr2", "snake_case_name", "ÄÖÜ", "變數"])
        lines = []
        for _ in range(self.r.randint(1, 12)):
            ind = self.r.choice(["", "    ", "        ", "\t", "\t\t", "  "])
            kind = self.r.randint(0, 5)
            if kind == 0:
                lines.append(f"{ind}for (int {ident()} = 0; i < {self.r.randint(0, 999)}; i++) {{")
            elif kind == 1:
                lines.append(f"{ind}def {ident()}(self, {ident()}={self.r.random():.3f}):")
            elif kind == 2:
                lines.append(f"{ind}{ident()} = {ident()}->{ident()}[{self.r.randint(0, 9)}] << 3 | 0x{self.r.randint(0, 65535):04X};")
            elif kind == 3:
                lines.append(f"{ind}// TODO: {self.prose(6)}")
            elif kind == 4:
                lines.append(f"{ind}return {ident()} != NULL && {ident()} >= -1e-9 ? \"{self.prose(3)}\" : '\\n';")
            else:
                lines.append(f"{ind}}}")
        return self.r.choice(["\n", "\r\n"]).join(lines)

    def numbers(self):
        parts = []
        for _ in range(self.r.randint(1, 8)):
            k = self.r.randint(0, 7)
            if k == 0:
                parts.append(str(self.r.randint(0, 10**self.r.randint(1, 30))))
            elif k == 1:
                parts.append(f"{self.r.uniform(-1e6, 1e6):.{self.r.randint(0, 8)}f}")
            elif k == 2:
                parts.append(f"{self.r.randint(1900, 2100)}-{self.r.randint(1, 12):02d}-{self.r.randint(1, 28):02d}")
            elif k == 3:
                parts.append(f"+1 ({self.r.randint(100, 999)}) {self.r.randint(100, 999)}-{self.r.randint(1000, 9999)}")
            elif k == 4:
                parts.append(f"{self.r.randint(0, 255)}.{self.r.randint(0, 255)}.{self.r.randint(0, 255)}.{self.r.randint(0, 255)}")
            elif k == 5:
                parts.append(f"{self.r.random():e}")
            elif k == 6:
                parts.append("".join(self.r.choice("٠١٢٣٤٥٦٧٨٩०१२३४५६७८९①②½²¾") for _ in range(self.r.randint(1, 6))))
            else:
                parts.append(f"${self.r.randint(0, 99999):,}.{self.r.randint(0, 99):02d}")
        return self.r.choice([" ", ", ", "; ", "\n", ""]).join(parts)

    def from_ranges(self, ranges, n):
        out = []
        for _ in range(n):
            lo, hi = self.r.choice(ranges)
            c = self.r.randint(lo, hi)
            if unicodedata.category(chr(c)) == "Cn":
                c = lo + 0x20 if unicodedata.category(chr(lo + 0x20)) != "Cn" else 0x4E00
            out.append(chr(c))
            if self.r.random() < 0.1:
                out.append(self.r.choice([" ", "，", "。", " ", "、", "!", "?"]))
        return "".join(out)

    def plane_chars(self, n):
        out = []
        for _ in range(n):
            plane = self.r.choice(sorted(self.planes))
            out.append(chr(self.r.choice(self.planes[plane])))
            if self.r.random() < 0.15:
                out.append(self.r.choice(WS[:6]))
        return "".join(out)

    def combining(self):
        out = []
        for _ in range(self.r.randint(1, 10)):
            if self.r.random() < 0.5:
                out.append(self.r.choice(NFC_CASES))
            else:
                out.append(self.r.choice("aeiouAEOcnsz" + "αωиक") + "".join(
                    chr(self.r.choice(COMBINING)) for _ in range(self.r.randint(1, 4))))
            if self.r.random() < 0.4:
                out.append(self.r.choice([" ", "", self.word()]))
        return "".join(out)

    def emoji(self):
        out = []
        for _ in range(self.r.randint(1, 12)):
            out.append(self.r.choice(EMOJI))
            if self.r.random() < 0.3:
                out.append(self.r.choice([" ", self.word(), "\u200d", "\ufe0f", "🏻"]))
        return "".join(out)

    def whitespace(self):
        out = []
        for _ in range(self.r.randint(1, 10)):
            out.append(self.r.choice(WS) * self.r.randint(1, 3))
            if self.r.random() < 0.6:
                out.append(self.word())
        return "".join(out)

    def specials(self, pool):
        out = []
        for _ in range(self.r.randint(1, 10)):
            k = self.r.random()
            if k < 0.45:
                out.append(self.r.choice(pool))
            elif k < 0.7:
                out.append(self.r.choice(WS[:8]))
            else:
                out.append(self.word())
        return self.r.choice(["", " ", "  "]).join(out)

    def long_word(self):
        n = self.r.randint(200, 20000)
        k = self.r.randint(0, 5)
        if k == 0:
            return self.r.choice("abcxyzé") * n
        if k == 1:
            return "".join(self.r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))
        if k == 2:
            return "".join(self.r.choice("0123456789") for _ in range(n))
        if k == 3:
            return "".join(self.r.choice("!@#$%^&*()-=+[]{};:,./<>?|~`") for _ in range(n))
        if k == 4:
            return self.from_ranges(CJK_RANGES[:1], n // 4).replace(" ", "")
        return "".join(self.r.choice(["ab", "ba", "aa", "bb", "a", "b"]) for _ in range(n // 2))

    def mixed_unicode(self, n):
        return "".join(chr(self.r.choice(self.all_cps)) for _ in range(n))

    def mixture(self, pool):
        fns = [lambda: self.prose(), lambda: self.whitespace(), lambda: self.emoji(),
               lambda: self.combining(), lambda: self.specials(pool), lambda: self.numbers(),
               lambda: self.from_ranges(CJK_RANGES + ARABIC + DEVANAGARI + OTHER_SCRIPTS, 8),
               lambda: self.plane_chars(5)]
        return self.r.choice(["", " ", "\n"]).join(self.r.choice(fns)() for _ in range(self.r.randint(2, 6)))

    def big(self, pool):
        """A string of about 100 KB."""
        target = 100 * 1024
        k = self.r.randint(0, 5)
        parts, size = [], 0
        while size < target:
            if k == 0:
                p = self.prose(40) + " "
            elif k == 1:
                p = self.json_doc()
            elif k == 2:
                p = self.from_ranges(CJK_RANGES, 200)
            elif k == 3:
                p = self.mixture(pool)
            elif k == 4:
                p = self.code() + "\n"
            else:
                p = self.whitespace() + self.specials(pool)
            parts.append(p)
            size += len(p.encode())
        s = "".join(parts)
        return s[: self.r.randint(target - 2000, target + 2000)] if k != 5 else s

    def categories(self, pool):
        return [
            ("prose", 14, lambda: self.prose()),
            ("json", 10, lambda: self.json_doc()),
            ("code", 8, lambda: self.code()),
            ("numbers", 7, lambda: self.numbers()),
            ("planes", 8, lambda: self.plane_chars(self.r.randint(1, 30))),
            ("combining", 8, lambda: self.combining()),
            ("cjk", 6, lambda: self.from_ranges(CJK_RANGES, self.r.randint(1, 60))),
            ("arabic", 4, lambda: self.from_ranges(ARABIC, self.r.randint(1, 40))),
            ("devanagari", 4, lambda: self.from_ranges(DEVANAGARI, self.r.randint(1, 40))),
            ("scripts", 4, lambda: self.from_ranges(OTHER_SCRIPTS, self.r.randint(1, 40))),
            ("emoji", 6, lambda: self.emoji()),
            ("whitespace", 9, lambda: self.whitespace()),
            ("edges", 4, lambda: self.r.choice(WS) + self.prose(3) + self.r.choice(WS)),
            ("specials", 9, lambda: self.specials(pool)),
            ("long_word", 1, lambda: self.long_word()),
            ("mixture", 8, lambda: self.mixture(pool)),
        ]


def corpus_strings(family, tok_json, n):
    seed = sum(map(ord, family)) * 7919 + 2026
    g = Gen(seed)
    pool = list(SPECIALS)
    for a in tok_json.get("added_tokens", []):
        if a["content"].strip():
            pool.append(a["content"])
    cats = g.categories(pool)
    weights = [w for _, w, _ in cats]
    out = [("empty", ""), ("edges", " "), ("edges", "  "), ("edges", "\t"), ("edges", "\n"),
           ("specials", "[MASK]"), ("specials", " [MASK]"), ("specials", "a  [MASK]b"), ("specials", "<mask>"),
           ("edges", "▁"), ("edges", " ▁x"), ("edges", "x "), ("edges", "é"), ("edges", "e\u0301")]
    out += [("specials", s) for s in FIXED_ADDED]
    for i in range(10):
        out.append(("big", g.big(pool)))
    while len(out) < n:
        name, _, fn = g.r.choices(cats, weights)[0]
        out.append((name, fn()))
    return out


def apply_variant(tok_json, patch):
    """A variant replaces top-level keys of tokenizer.json, except "model", whose
    keys it replaces one by one (tests/test_tokenizer.c applies the same rule)."""
    for k, v in patch.items():
        if k == "model":
            tok_json["model"].update(v)
        else:
            tok_json[k] = v
    return tok_json


def cmd_corpus(family, tok_path, full_path, fixture_path, n, variant=None):
    tok_json = json.load(open(tok_path, encoding="utf-8"))
    if variant:
        patches = json.load(open("tests/fixtures/tokenizer/variants.json", encoding="utf-8"))
        tok_json = apply_variant(tok_json, patches[variant])
    tok = Tokenizer.from_str(json.dumps(tok_json))
    items = corpus_strings(family, tok_json, n)
    ids = [e.ids for e in tok.encode_batch([s for _, s in items], add_special_tokens=False)]
    with open(full_path, "w", encoding="utf-8") as f:
        for (cat, s), i in zip(items, ids):
            f.write(json.dumps({"cat": cat, "text": s, "ids": i}, ensure_ascii=False) + "\n")
    # fixture: the fixed edge cases, then per category the first strings that keep it small
    r = random.Random(7)
    per_cat, chosen = {}, []
    small = n < 10000
    for k, ((cat, s), i) in enumerate(zip(items, ids)):
        limit = 4000 if cat in ("long_word", "big") else (200 if small else 600)
        quota = 2 if cat in ("long_word", "big") else (8 if small else 25)
        if k < 14 + len(FIXED_ADDED) or (len(s) <= limit and per_cat.get(cat, 0) < quota and r.random() < 0.5):
            per_cat[cat] = per_cat.get(cat, 0) + 1
            chosen.append((cat, s, i))
        if cat == "big" and per_cat.get("big_cut", 0) < 1 and not small:
            # one slice of a 100 KB string, re-encoded on its own
            cut = s[:20000]
            per_cat["big_cut"] = 1
            chosen.append(("big", cut, tok.encode(cut, add_special_tokens=False).ids))
    with open(fixture_path, "w", encoding="utf-8") as f:
        for cat, s, i in chosen:
            f.write(json.dumps({"cat": cat, "text": s, "ids": i}, ensure_ascii=False) + "\n")
    print(f"{family}: {len(items)} strings -> {full_path}; {len(chosen)} -> {fixture_path}")


# ---- the Gemma-like tokenizer -------------------------------------------------

def cmd_gemma(out_path):
    g = Gen(4242)
    pool = list(SPECIALS)
    texts = []
    for _ in range(30000):
        name, _, fn = g.r.choices(g.categories(pool)[:-2] + [("p", 30, lambda: g.prose(20))],
                                  [w for _, w, _ in g.categories(pool)[:-2]] + [30])[0]
        texts.append(fn())
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    trainer = trainers.BpeTrainer(vocab_size=4200, min_frequency=2, special_tokens=specials,
                                  limit_alphabet=400, show_progress=False)
    tok.train_from_iterator(texts, trainer)
    trained = json.loads(tok.to_str())["model"]
    # Gemma layout: specials 0-4, then the 256 byte tokens, then the learned pieces
    vocab = {s: i for i, s in enumerate(specials)}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece, _ in sorted(trained["vocab"].items(), key=lambda kv: kv[1]):
        if piece not in vocab:
            vocab[piece] = len(vocab)
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in trained["merges"]]
    model = models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True)
    out = Tokenizer(model)
    out.normalizer = normalizers.Replace(" ", "▁")
    out.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    out.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    out.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    out.add_special_tokens([AddedToken("<start_of_turn>", special=True, normalized=False),
                            AddedToken("<end_of_turn>", special=True, normalized=False),
                            AddedToken("[MASK]", special=True, normalized=False, lstrip=True)])
    out.add_tokens([AddedToken("|||IP_ADDRESS|||", special=False, normalized=True),
                    AddedToken("New York", special=False, normalized=True),
                    AddedToken("hello", special=False, normalized=True, single_word=True),
                    AddedToken("<rs>", special=False, normalized=False, rstrip=True),
                    AddedToken("<ls>", special=False, normalized=True, lstrip=True, rstrip=True),
                    AddedToken("\n\n", special=False, normalized=False)])
    out.save(out_path)
    d = json.load(open(out_path, encoding="utf-8"))
    print(f"gemma: {len(d['model']['vocab'])} vocab, {len(d['model']['merges'])} merges -> {out_path}")


if __name__ == "__main__":
    if sys.argv[1] == "gemma":
        cmd_gemma(sys.argv[2])
    elif sys.argv[1] == "corpus":
        cmd_corpus(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5],
                   int(sys.argv[6]) if len(sys.argv) > 6 else 10000,
                   sys.argv[7] if len(sys.argv) > 7 else None)
    else:
        sys.exit(__doc__)
