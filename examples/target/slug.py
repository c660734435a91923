"""A tiny module for the example plan to test: URL slugs."""

import re
import unicodedata


def slugify(title: str) -> str:
    """Lower-case ASCII words of title, joined by hyphens."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    return "-".join(re.findall(r"[a-z0-9]+", ascii_title.lower()))
