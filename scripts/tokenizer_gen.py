#!/usr/bin/env python3
"""tokenizer_gen.py - oracle data for layad's tokenizer (run through scripts/tokenizer-gen).

  gemma OUT.json            build the mmBERT/Gemma-like tokenizer.json with HF `tokenizers`
  unidata OUT.c             write model/tokenizer/unidata.c: where HF's Unicode data and the
                            system's PCRE2 / utf8proc disagree (probed, see cmd_unidata)
  corpus FAMILY TOK.json FULL.jsonl FIXTURE.jsonl [N [VARIANT]]
                            write N (default 10000) strings with the HF ids of
                            Tokenizer.from_file(TOK).encode(s, add_special_tokens=False),
                            all of them to FULL, a small representative subset to FIXTURE;
                            with VARIANT, TOK is first patched by that entry of
                            tests/fixtures/tokenizer/variants.json (see apply_variant)
  unicode FAMILY TOK.json OUT.jsonl N SEED [VARIANT]
                            N short strings dense in normalization and class edge cases
                            (NORM_EDGES, random code points, ASCII), seeded by SEED alone
                            (the same strings for every family), with their HF ids: the
                            differential check `scripts/tokenizer-parity --unicode` reads

Every line of a corpus file is {"cat": category, "text": string, "ids": [..]}.
Strings are deterministic per family (seeded), so the committed fixtures and the
full corpus agree. Characters are drawn from code points assigned in Python's
unicodedata, the planes unassigned in every Unicode version (4-13), private use
(15-16), and (category "newer") the code points where HF's Unicode tables and the
C libraries' differ, listed in model/tokenizer/unidata.c.
"""
import json
import random
import re
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
               "<r><r> <r>", "|||IP_ADDRESS||||||IP_ADDRESS|||", "[MASK]\u00a0", "word\u200dword",
               "\ufdfa", "a \ufdfa b", "\ufb01le file", "\u216b  x", "\u2126 \u03a9x", "\u00bd 1\u20442", "ax\u00b2 x2"]

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


def unidata_cps():
    """The generated difference tables as {name: [code points]} (empty before they exist)."""
    try:
        text = open("model/tokenizer/unidata.c", encoding="utf-8").read()
    except OSError:
        return {}
    out = {}
    for name, body in re.findall(r"const uint32_t (\w+)\[\]\[2\] = \{(.*?)\};", text, re.S):
        cps = []
        for a, b in re.findall(r"\{0x([0-9A-F]+), 0x([0-9A-F]+)\}", body):
            cps.extend(range(int(a, 16), int(b, 16) + 1))
        out[name] = cps
    return out


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.planes = assigned_ranges()
        self.all_cps = [cp for v in self.planes.values() for cp in v]
        tables = unidata_cps()
        self.newer_inert = tables.get("tok_norm_inert") or [0x41]
        self.newer_alnum = (tables.get("tok_extra_letter", []) + tables.get("tok_extra_number", [])) or [0x41]

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

    def newer_chars(self):
        """Code points HF's tables and ours disagree on: marks HF does not know among
        ones it does (reordering, composition), letters and digits next to others."""
        out = []
        for _ in range(self.r.randint(1, 8)):
            if self.r.random() < 0.6:
                out.append(self.r.choice("aeoAuαиक") + "".join(
                    chr(self.r.choice(self.newer_inert if self.r.random() < 0.5 else COMBINING))
                    for _ in range(self.r.randint(1, 4))))
            else:
                out.append("".join(chr(self.r.choice(self.newer_alnum)) for _ in range(self.r.randint(1, 4))))
            if self.r.random() < 0.5:
                out.append(self.r.choice([" ", "a", "1", "é", ".", ""]))
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
            ("newer", 4, lambda: self.newer_chars()),
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


# Code points where normalization or the pattern's classes have rules of their own: every
# combining diacritic, Hangul jamo and syllables (U+11A7 and U+11C3 just outside the trailing
# consonants), vowel signs that compose with class 0 (Indic, Myanmar, Balinese, Kaithi, Chakma,
# Grantha, Tirhuta, Siddham, Dives Akuru), Tibetan vowels that decompose, singletons,
# exclusions, kana voicing, Hebrew and Arabic marks, code points HF's Unicode 9.0 tables lack,
# joiners and selectors, emoji modifiers, White_Space beyond ASCII, numbers of all kinds.
NORM_EDGES = ([0x0300 + i for i in range(0x70)] + [
    0x1100, 0x1112, 0x1161, 0x1175, 0x11A7, 0x11A8, 0x11C2, 0x11C3, 0xAC00, 0xAC01, 0xD7A3, 0x0DD9, 0x0DCF,
    0x0DCA, 0x0DDF, 0x0928, 0x093C, 0x0929, 0x0958, 0x09C7, 0x09BE, 0x09D7, 0x0B47, 0x0B56, 0x0B3E, 0x0BC6,
    0x0BBE, 0x0BD7, 0x0CC6, 0x0CD5, 0x0CC2, 0x0D46, 0x0D3E, 0x0D57, 0x1025, 0x102E, 0x1B05, 0x1B35, 0x0F71,
    0x0F72, 0x0F73, 0x0F74, 0x0F75, 0x0F80, 0x0F81, 0x0F77, 0x0F79, 0x0344, 0x0340, 0x0341, 0x0343, 0x0374,
    0x037E, 0x0387, 0x1F71, 0x1FBB, 0x2000, 0x2001, 0x2126, 0x212A, 0x212B, 0x2329, 0x232A, 0xF900, 0xFA10,
    0x2F800, 0x1D15E, 0x1D160, 0x1D165, 0x1D16E, 0x1109A, 0x11099, 0x110BA, 0x1112E, 0x11131, 0x11127,
    0x1134B, 0x1133E, 0x11357, 0x114BB, 0x114BA, 0x114B0, 0x115BA, 0x115AF, 0x11938, 0x11935, 0x11930, 0x3099,
    0x309A, 0x304B, 0x30AB, 0x309B, 0x05B0, 0x05B8, 0x05BC, 0x05C1, 0xFB2C, 0x0622, 0x0653, 0x0654, 0x0655,
    0x0898, 0x1ABF, 0x1DF6, 0x1E08F, 0x10EFD, 0x200D, 0x200C, 0xFE0F, 0xFE0E, 0x1F468, 0x1F3FB, 0x1F600, 0x00A0,
    0x0085, 0x2028, 0x3000, 0x180E, 0x00B2, 0x2160, 0x0660, 0x1C89, 0x10D40, 0x00BD, 0xFB01, 0x2460, 0x00C5,
    0x00E9, 0x00FC, 0x01D5, 0x1E08, 0x1E9B, 0x03D3, 0x03D2, 0x0439, 0x0419, 0x0418, 0x0E33, 0x0EB3, 0x0E4D,
    0x0E32, 0x1E0C, 0x1E0D])


def unicode_strings(seed, n):
    """n strings of 1-29 code points: a third ASCII, about half NORM_EDGES, the rest random
    code points (half of them below U+3400), mostly assigned ones."""
    r = random.Random(seed)

    def any_cp():
        while True:
            c = r.randrange(0x20, 0x110000) if r.random() < 0.5 else r.randrange(0x20, 0x3400)
            if not 0xD800 <= c <= 0xDFFF and (unicodedata.category(chr(c)) != "Cn" or r.random() < 0.2):
                return c

    def one():
        out = []
        for _ in range(r.randrange(1, 30)):
            x = r.random()
            out.append(r.choice("abcde xyz 'stm.,!?0123456789\t\n") if x < 0.35 else
                       chr(r.choice(NORM_EDGES)) if x < 0.8 else chr(any_cp()))
        return "".join(out)
    return [one() for _ in range(n)]


def load_tokenizer(tok_path, variant):
    """tokenizer.json at tok_path, patched by variant (if any), and its HF Tokenizer."""
    tok_json = json.load(open(tok_path, encoding="utf-8"))
    if variant:
        patches = json.load(open("tests/fixtures/tokenizer/variants.json", encoding="utf-8"))
        tok_json = apply_variant(tok_json, patches[variant])
    return tok_json, Tokenizer.from_str(json.dumps(tok_json))


def cmd_unicode(family, tok_path, out_path, n, seed, variant=None):
    _, tok = load_tokenizer(tok_path, variant)
    strings = unicode_strings(seed, n)
    ids = [e.ids for e in tok.encode_batch(strings, add_special_tokens=False)]
    with open(out_path, "w", encoding="utf-8") as f:
        for s, i in zip(strings, ids):
            f.write(json.dumps({"cat": "unicode", "text": s, "ids": i}, ensure_ascii=False) + "\n")
    print(f"{family}: {n} strings (seed {seed}) -> {out_path}")


def cmd_corpus(family, tok_path, full_path, fixture_path, n, variant=None):
    tok_json, tok = load_tokenizer(tok_path, variant)
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
            cut = s[:6000]
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


# ---- Unicode data differences -------------------------------------------------

def cmd_unidata(out_path):
    """HF `tokenizers` normalizes with the Unicode 9.0 tables of its normalization crate and
    splits with Oniguruma (Unicode 16.0); the C side uses utf8proc and PCRE2, whose tables are
    other versions. Probe every code point through HF and through the two libraries (ctypes)
    and record the differences:
      NORM_INERT: code points HF leaves alone under NFD/NFKD/NFC in every probe context while
                  utf8proc decomposes, reorders or composes them (all assigned after 9.0),
                  plus the parts of utf8proc decompositions of such code points;
      EXTRA_L / EXTRA_N: code points Oniguruma puts in \p{L} / \p{N} and PCRE2 does not.
    Differences the other way (PCRE2 letter, Oniguruma not) or in white space abort: the C
    side has no way to express them."""
    import ctypes
    from tokenizers import normalizers, pre_tokenizers
    u = ctypes.CDLL("libutf8proc.so.2")
    u.utf8proc_category.restype = ctypes.c_int
    u.utf8proc_unicode_version.restype = ctypes.c_char_p
    for f in ("utf8proc_NFKD", "utf8proc_NFD", "utf8proc_NFC"):
        getattr(u, f).restype = ctypes.c_void_p
    libc = ctypes.CDLL("libc.so.6")

    def ufn(name, text):
        ptr = getattr(u, name)(text.encode())
        r = ctypes.cast(ptr, ctypes.c_char_p).value.decode()
        libc.free(ctypes.c_void_p(ptr))
        return r

    cps = [cp for cp in range(0x20, 0x110000) if not (0xD800 <= cp <= 0xDFFF) and u.utf8proc_category(cp) != 0]
    hf = {"utf8proc_NFKD": normalizers.NFKD(), "utf8proc_NFD": normalizers.NFD(), "utf8proc_NFC": normalizers.NFC()}
    probes = [("utf8proc_NFKD", lambda c: c), ("utf8proc_NFD", lambda c: "a" + c + "\u0334"),
              ("utf8proc_NFD", lambda c: "a\u0301" + c), ("utf8proc_NFC", lambda c: c),
              ("utf8proc_NFC", lambda c: "a" + c + "\u0301")]
    inert = set()
    for i in range(0, len(cps), 5000):
        chunk = [chr(c) for c in cps[i:i + 5000]]
        for name, pf in probes:
            items = [pf(c) for c in chunk]
            got = hf[name].normalize_str("\n".join(items)).split("\n")
            assert len(got) == len(items)
            for c, it, o in zip(chunk, items, got):
                if ufn(name, it) != o:
                    inert.add(ord(c))
    for c in list(inert):
        inert.update(ord(d) for d in ufn("utf8proc_NFD", chr(c)))

    p = ctypes.CDLL("libpcre2-8.so.0")
    p.pcre2_compile_8.restype = ctypes.c_void_p
    p.pcre2_match_data_create_8.restype = ctypes.c_void_p
    p.pcre2_config_8.restype = ctypes.c_int

    def comp(pat):
        ec, eo = ctypes.c_int(), ctypes.c_size_t()
        b = pat.encode()
        c = p.pcre2_compile_8(b, len(b), 0x00080000 | 0x00020000 | 0x80000000 | 0x20000000,
                              ctypes.byref(ec), ctypes.byref(eo), None)
        assert c, pat
        return ctypes.c_void_p(c)
    re_l, re_n = comp(r"\p{L}"), comp(r"\p{N}")
    md = ctypes.c_void_p(p.pcre2_match_data_create_8(1, None))
    pcre_ver = ctypes.create_string_buffer(64)
    p.pcre2_config_8(10, pcre_ver)  # PCRE2_CONFIG_UNICODE_VERSION

    def pm(re, ch):
        b = ch.encode()
        return p.pcre2_match_8(re, b, len(b), 0, 0, md, None) >= 0
    bl = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    ws = {9, 10, 11, 12, 13, 32, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000}
    extra_l, extra_n = [], []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        onig_ws = len(bl.pre_tokenize_str("\n" + ch)) == 1
        if onig_ws != (cp in ws):
            sys.exit(f"unidata: white space differs at U+{cp:04X}")
        if onig_ws:
            continue
        ol = len(bl.pre_tokenize_str("a" + ch)) == 1
        on = len(bl.pre_tokenize_str("1" + ch)) == 1
        pl, pn = pm(re_l, ch), pm(re_n, ch)
        if pl != ol and pl or pn != on and pn:
            sys.exit(f"unidata: PCRE2 has U+{cp:04X} in a class Oniguruma does not")
        if ol and not pl:
            extra_l.append(cp)
        if on and not pn:
            extra_n.append(cp)

    def ranges(cps_):
        r = []
        for c in sorted(cps_):
            if r and r[-1][1] == c - 1:
                r[-1][1] = c
            else:
                r.append([c, c])
        return r

    def table(name, cps_, comment):
        rs = ranges(cps_)
        lines = [f"/* {comment} */", f"const uint32_t {name}[][2] = {{"]
        row = "   "
        for a, b in rs:
            item = f" {{0x{a:X}, 0x{b:X}}},"
            if len(row) + len(item) > 100:
                lines.append(row)
                row = "   "
            row += item
        lines.append(row)
        lines += ["};", f"const size_t {name}_N = {len(rs)};", ""]
        return "\n".join(lines)
    import tokenizers
    head = f"""/*
 * tokenizer_unidata.c - GENERATED by `scripts/tokenizer-gen --unidata`; do not edit.
 *
 * Where the Unicode data behind HF `tokenizers` {tokenizers.__version__} differs from the
 * libraries layad uses (utf8proc {u.utf8proc_unicode_version().decode()} data, PCRE2 with
 * Unicode {pcre_ver.value.decode()} data), found by probing every code point through both
 * (scripts/tokenizer_gen.py cmd_unidata). HF normalizes with Unicode 9.0 tables and splits
 * with Oniguruma's (Unicode 16.0); the C side consults these ranges to do the same.
 */
#include "model/tokenizer/internal.h"

"""
    body = table("tok_norm_inert", inert, "HF leaves these alone in NFC/NFD/NFKC/NFKD: starters, no decomposition, no composition")
    body += table("tok_extra_letter", extra_l, "\\p{L} for Oniguruma, unassigned for PCRE2")
    body += table("tok_extra_number", extra_n, "\\p{N} for Oniguruma, unassigned for PCRE2")
    open(out_path, "w").write(head + body)
    print(f"unidata: {len(inert)} inert, {len(extra_l)} extra letters, {len(extra_n)} extra numbers -> {out_path}")


if __name__ == "__main__":
    if sys.argv[1] == "gemma":
        cmd_gemma(sys.argv[2])
    elif sys.argv[1] == "unidata":
        cmd_unidata(sys.argv[2])
    elif sys.argv[1] == "corpus":
        cmd_corpus(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5],
                   int(sys.argv[6]) if len(sys.argv) > 6 else 10000,
                   sys.argv[7] if len(sys.argv) > 7 else None)
    elif sys.argv[1] == "unicode":
        cmd_unicode(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]),
                    sys.argv[7] if len(sys.argv) > 7 else None)
    else:
        sys.exit(__doc__)
