"""MkDocs hook: paper ids in the API reference become the paper and the place, in words.

The docstrings (and so the API reference mkdocstrings renders from them) cite the papers by a three-digit id
("000 Thm 7.2", "001 Sec 3"), decoded on the papers page (docs/papers.md).  On the site the reader gets words:
"Theorem 7.2 of the Blowfish paper", by the package's own translation.  Only the papers page keeps the ids.
"""

from blowfish_privacy._citations import in_words


def on_page_content(html, page, config, files):
    if page.file.src_uri == "papers.md":
        return html
    return in_words(html)
