"""Small XML helpers shared by the loaders: parsing with line numbers and checked numbers.

Elements come from :mod:`xml.etree.ElementTree`; the line on which each element starts is
kept in a side table (``Document.line(element)``) because the C ``Element`` type takes no
extra attributes.  Every error is a ``ValueError`` whose message names the source, the
element and the line.
"""

from __future__ import annotations

import math
import os
import pathlib
import xml.etree.ElementTree as ET
from xml.parsers import expat

import numpy as np


class Document:
    """A parsed XML document that remembers the line of every element."""

    def __init__(self, root: ET.Element, lines: dict[int, int], source: str):
        self.root = root
        self._lines = lines
        self.source = source

    def line(self, el: ET.Element) -> int | None:
        return self._lines.get(id(el))

    def where(self, el: ET.Element, what: str | None = None) -> str:
        """``"<source>, line N, <tag name='...'>"`` for error messages."""
        name = el.get("name")
        tag = f"<{el.tag}{f' name={name!r}' if name is not None else ''}>"
        line = self.line(el)
        at = f", line {line}" if line is not None else ""
        return f"{self.source}{at}, {tag}" + (f" {what}" if what else "")

    def error(self, el: ET.Element, message: str) -> ValueError:
        return ValueError(f"{self.where(el)}: {message}")

    # -- typed attribute access ---------------------------------------------------
    def floats(self, el: ET.Element, attr: str, n: int | None = None, default=None) -> np.ndarray:
        """Attribute ``attr`` of ``el`` as ``n`` finite floats (``default`` if absent)."""
        text = el.get(attr)
        if text is None:
            if default is None:
                raise self.error(el, f"missing attribute {attr!r}")
            return np.asarray(default, dtype=np.float64)
        parts = text.replace(",", " ").split()
        try:
            vals = np.array([float(p) for p in parts], dtype=np.float64)
        except ValueError:
            raise self.error(el, f"attribute {attr}={text!r} is not a list of numbers") from None
        if n is not None and vals.shape != (n,):
            raise self.error(el, f"attribute {attr}={text!r} must have {n} numbers, got {len(vals)}")
        if not np.all(np.isfinite(vals)):
            raise self.error(el, f"attribute {attr}={text!r} contains NaN or infinity")
        return vals

    def float(self, el: ET.Element, attr: str, default: float | None = None) -> float:
        if el.get(attr) is None and default is not None:
            return float(default)
        v = float(self.floats(el, attr, 1)[0])
        if math.isnan(v):  # pragma: no cover - floats() already rejects it
            raise self.error(el, f"attribute {attr} is NaN")
        return v


def looks_like_xml(path_or_xml) -> bool:
    return isinstance(path_or_xml, str) and path_or_xml.lstrip().startswith("<")


def read_source(path_or_xml, kind: str) -> tuple[str, str, pathlib.Path | None]:
    """Return ``(text, source name, path or None)`` of a path or an XML string."""
    if isinstance(path_or_xml, bytes):
        return path_or_xml.decode("utf-8"), f"<{kind} string>", None
    if looks_like_xml(path_or_xml):
        return path_or_xml, f"<{kind} string>", None
    if not isinstance(path_or_xml, (str, os.PathLike)):
        raise TypeError(f"expected a file path or an XML string, got {type(path_or_xml).__name__}")
    path = pathlib.Path(path_or_xml)
    if not path.is_file():
        raise FileNotFoundError(f"{kind} file not found: {str(path)!r}")
    return path.read_text(encoding="utf-8"), str(path), path


def parse(text: str, source: str) -> Document:
    """Parse ``text`` with expat into ElementTree elements, keeping line numbers."""
    builder = ET.TreeBuilder()
    lines: dict[int, int] = {}
    parser = expat.ParserCreate()
    parser.buffer_text = True
    # Element objects stay alive in the tree, so their ids are stable keys.
    keep: list[ET.Element] = []

    def start(tag, attrs):
        el = builder.start(tag, attrs)
        lines[id(el)] = parser.CurrentLineNumber
        keep.append(el)

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(text, True)
        root = builder.close()
    except expat.ExpatError as e:
        raise ValueError(f"{source}: malformed XML at line {e.lineno}, column {e.offset}: "
                         f"{expat.ErrorString(e.code)}") from None
    except AssertionError:  # TreeBuilder.close() on an empty document
        raise ValueError(f"{source}: malformed XML: no root element") from None
    return Document(root, lines, source)
