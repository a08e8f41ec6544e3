"""MkDocs hook: paper ids in the API reference become the paper and the place, in words.

The docstrings (and so the API reference mkdocstrings renders from them) cite the papers by a three-digit id
("000 Thm 7.2", "001 Sec 3", "SIGMOD 2014 (000), Sec 7.2"), decoded on the papers page (docs/papers.md).  On
the site the reader gets words: "Theorem 7.2 of the Blowfish paper".  Only the papers page keeps the ids.
"""

import re

PAPERS = {"000": "the Blowfish paper", "001": "Anuarbek's report", "002": "Machanavajjhala and Kifer's CACM article",
          "003": "the Pufferfish paper", "004": "the exact-cuboids draft"}
KINDS = {"Thm": ("Theorem", "Theorems"), "Sec": ("Section", "Sections"), "Def": ("Definition", "Definitions"),
         "Lemma": ("Lemma", "Lemmas"), "Fig": ("Figure", "Figures"), "eq.": ("equation", "equations"),
         "eqs.": ("equations", "equations"), "Cor": ("Corollary", "Corollaries"), "Alg": ("Algorithm", "Algorithms"),
         "Prop": ("Proposition", "Propositions")}
_KIND = r"(Thm|Sec|Def|Lemma|Fig|eqs\.|eq\.|Cor|Alg|Prop)"
_NUM = (r"(\d+(?:\.\d+)*(?:\([a-z]\))?(?:\s*(?:-|/|,|and)\s*(?!00[0-4]\s+" + _KIND + r")\d+(?:\.\d+)*(?:\([a-z]\))?)*)")
_PLACE = re.compile(r"\b(00[0-4])\s+" + _KIND + r"\s+" + _NUM)
# "... SIGMOD 2014 (000), Sec 7.2": the paper is named just before; the id goes, the place is spelled out
_CITED = re.compile(r"\s*\((?:paper\s+)?(00[0-4])\)(,?\s*)" + _KIND + r"\s+" + _NUM)
# "PODS 2012 (Pufferfish, paper 003), Sec 7.1"
_TRAIL_PLACE = re.compile(r",\s*paper\s+(00[0-4])\),\s*" + _KIND + r"\s+" + _NUM)
_BARE_CITED = re.compile(r"(?<=\d{4})\s*\((?:paper\s+)?(00[0-4])\)")
_BARE = re.compile(r"\((?:paper\s+)?(00[0-4])\)")
_TRAIL = re.compile(r",\s*paper\s+(00[0-4])\)")
_PAPER = re.compile(r"\bpaper\s+(00[0-4])\b")
_OWNER = re.compile(r"\b(00[0-4])(?='s\b|\s+(?:uses|keeps|has|says|gives|calls)\b)")


def _place(kind, num):
    one, many = KINDS[kind]
    plural = re.search(r"[-/,]|\band\b", num)
    return f"{many if plural else one} {num.replace('/', ' and ')}"


def name_papers(text):
    """`text` with every paper id replaced by the paper's name and the place in words."""
    text = _TRAIL_PLACE.sub(lambda m: f"), {_place(m.group(2), m.group(3))}", text)
    text = _CITED.sub(lambda m: f"{m.group(2) or ', '}{_place(m.group(3), m.group(4))}", text)
    text = _PLACE.sub(lambda m: f"{_place(m.group(2), m.group(3))} of {PAPERS[m.group(1)]}", text)
    text = _TRAIL.sub(")", text)
    text = _PAPER.sub(lambda m: PAPERS[m.group(1)], text)
    text = _BARE_CITED.sub("", text)
    text = _BARE.sub(lambda m: f"({PAPERS[m.group(1)]})", text)
    return _OWNER.sub(lambda m: PAPERS[m.group(1)], text)


def on_page_content(html, page, config, files):
    if page.file.src_uri == "papers.md":
        return html
    return name_papers(html)
