"""The source papers in words: what a reader sees instead of the short ids of the papers.

Docstrings and comments cite the source papers by a three-digit
id and a place ("000 Thm 7.2", "001 Sec 3"); docs/papers.md decodes them.
Nothing a user reads at run time (messages, console lines, JSON fields,
``--help``, figures) carries an id: it names the paper and the place in
words ("Theorem 7.2 of the Blowfish paper"; docs/papers.md maps the
names to the papers).  ``in_words`` translates text built elsewhere (the
API reference, figure labels); the package's own strings are written in
words to begin with, and tests/test_user_text.py holds them so.
"""

from __future__ import annotations

import re

__all__ = ["PAPERS", "PAPER_ID", "in_words"]

#: Each paper as a sentence names it.
PAPERS = {
    "000": "the Blowfish paper",
    "001": "the data-dependent Blowfish report",
    "002": "Machanavajjhala and Kifer's CACM article",
    "003": "the Pufferfish paper",
    "004": "the exact-cuboids draft",
}

_KINDS = {"Thm": ("Theorem", "Theorems"), "Sec": ("Section", "Sections"), "Def": ("Definition", "Definitions"),
          "Lemma": ("Lemma", "Lemmas"), "Fig": ("Figure", "Figures"), "eq.": ("equation", "equations"),
          "eqs.": ("equations", "equations"), "Cor": ("Corollary", "Corollaries"), "Alg": ("Algorithm", "Algorithms"),
          "Prop": ("Proposition", "Propositions"), "App": ("Appendix", "Appendices")}
_KIND = r"(Thm|Sec|Def|Lemma|Fig|eqs\.|eq\.|Cor|Alg|Prop|App)"
_NUM = (r"(\d+(?:\.\d+)*(?:\([a-z]\))?(?:\s*(?:-|/|,|and)\s*(?!00[0-4]\s+" + _KIND + r")\d+(?:\.\d+)*(?:\([a-z]\))?)*)")
# "000 Thm 7.2"
_PLACE = re.compile(r"\b(00[0-4])\s+" + _KIND + r"\s+" + _NUM)
# "... SIGMOD 2014 (000), Sec 7.2": the paper is named just before; the id goes, the place is spelled out
_CITED = re.compile(r"\s*\((?:paper\s+)?(00[0-4])\)(,?\s*)" + _KIND + r"\s+" + _NUM)
# "PODS 2012 (Pufferfish, paper 003), Sec 7.1"
_TRAIL_PLACE = re.compile(r",\s*paper\s+(00[0-4])\),\s*" + _KIND + r"\s+" + _NUM)
_BARE_CITED = re.compile(r"(?<=\d{4})\s*\((?:paper\s+)?(00[0-4])\)")
_BARE = re.compile(r"\((?:paper\s+)?(00[0-4])\)")
_TRAIL = re.compile(r",\s*paper\s+(00[0-4])\)")
_PAPER = re.compile(r"\bpaper\s+(00[0-4])\b")
# "001 (Anuarbek) Sec 3": the author after the id
_AUTHOR = re.compile(r"\b(00[0-4])\s+\([A-Z][\w .]*\)")
_OWNER = re.compile(r"\b(00[0-4])(?='s\b|\s+(?:uses|keeps|has|says|gives|calls)\b)")
# a place after a cited place, the paper understood: "000 Thm 4.1; parallel, Thm 4.2"
_LONE_PLACE = re.compile(r"(?<![\w.])" + _KIND + r"\s+(?=\d)")

#: What the tests look for in text a user reads: an id with a place, or an id in brackets.
PAPER_ID = re.compile(r"(?<![\d,.])\b00[0-4]\b(?=\s*(?:\(|'s\b|" + _KIND + r"))|\((?:paper\s+)?00[0-4]\b|\bpaper\s+00[0-4]\b")


def _place(kind: str, num: str) -> str:
    one, many = _KINDS[kind]
    plural = re.search(r"[-/,]|\band\b", num)
    return f"{many if plural else one} {num.replace('/', ' and ')}"


def in_words(text: str) -> str:
    """``text`` with every paper id ("000 Thm 7.2", "(001)", "paper 003") replaced by the paper's name
    and the place in words ("Theorem 7.2 of the Blowfish paper").  Text without ids comes back unchanged.
    """
    if not re.search(r"\b00[0-4]\b", text):
        return text
    text = _AUTHOR.sub(lambda m: PAPERS[m.group(1)] + ",", text)
    text = _TRAIL_PLACE.sub(lambda m: f"), {_place(m.group(2), m.group(3))}", text)
    text = _CITED.sub(lambda m: f"{m.group(2) or ', '}{_place(m.group(3), m.group(4))}", text)
    text = _PLACE.sub(lambda m: f"{_place(m.group(2), m.group(3))} of {PAPERS[m.group(1)]}", text)
    text = _TRAIL.sub(")", text)
    text = _PAPER.sub(lambda m: PAPERS[m.group(1)], text)
    text = _BARE_CITED.sub("", text)
    text = _BARE.sub(lambda m: f"({PAPERS[m.group(1)]})", text)
    text = _OWNER.sub(lambda m: PAPERS[m.group(1)], text)
    return _LONE_PLACE.sub(lambda m: _KINDS[m.group(1)][0] + " ", text)
