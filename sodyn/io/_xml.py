"""Small XML helpers shared by the loaders: parsing with line numbers and checked numbers.

Elements come from :mod:`xml.etree.ElementTree`; the line on which each element starts is
kept in a side table (``Document.line(element)``) because the C ``Element`` type takes no
extra attributes.  Every error is a ``ValueError`` whose message names the source, the
element and the line.
"""

from __future__ import annotations

import codecs
import math
import os
import pathlib
import re
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
        return np.array(self._numbers(el, attr, text, n), dtype=np.float64)

    def _numbers(self, el: ET.Element, attr: str, text: str, n: int | None) -> list[float]:
        """``text`` as a list of finite floats (plain Python: the loaders call it per attribute)."""
        parts = text.replace(",", " ").split()
        try:
            vals = [float(p) for p in parts]
        except ValueError:
            raise self.error(el, f"attribute {attr}={text!r} is not a list of numbers") from None
        if n is not None and len(vals) != n:
            raise self.error(el, f"attribute {attr}={text!r} must have {n} numbers, got {len(vals)}")
        if not all(map(math.isfinite, vals)):
            raise self.error(el, f"attribute {attr}={text!r} contains NaN or infinity")
        return vals

    def float(self, el: ET.Element, attr: str, default: float | None = None) -> float:
        text = el.get(attr)
        if text is None:
            if default is None:
                raise self.error(el, f"missing attribute {attr!r}")
            return float(default)
        return self._numbers(el, attr, text, 1)[0]


def looks_like_xml(path_or_xml) -> bool:
    return isinstance(path_or_xml, str) and path_or_xml.lstrip("\ufeff \t\r\n").startswith("<")


#: The XML declaration at the start of a document (after optional whitespace), and its encoding.
_DECLARATION = re.compile(r"^(\s*)(<\?xml\b.*?\?>)", re.DOTALL)
_ENCODING = re.compile(rb"""^\s*<\?xml\b[^>]*?\bencoding\s*=\s*["']([A-Za-z0-9._:-]+)["']""")
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def decode(data: bytes, source: str) -> str:
    """Decode the bytes of an XML document as the XML specification says (what tinyxml and
    libxml2, hence urdfdom and Pinocchio, accept): a byte-order mark first, then a UTF-16
    document without one (recognised by its ``<`` as two bytes), then the ``encoding`` of the
    declaration, else UTF-8.  Failures are ``ValueError`` naming ``source``."""
    enc = next((e for bom, e in _BOMS if data.startswith(bom)), None)
    if enc is None and len(data) >= 2 and data[0] == 0 and data[1] != 0:
        enc = "utf-16-be"
    elif enc is None and len(data) >= 2 and data[0] != 0 and data[1] == 0:
        enc = "utf-16-le"
    if enc is None:
        m = _ENCODING.match(data)
        enc = m.group(1).decode("ascii") if m else "utf-8"
        try:
            name = codecs.lookup(enc).name
        except LookupError:
            raise ValueError(f"{source}: the XML declaration names an unknown encoding {enc!r}") from None
        if name.startswith(("utf-16", "utf-32")):  # readable as ASCII, so not really UTF-16/32
            enc = "utf-8"
    try:
        return data.decode(enc)
    except UnicodeDecodeError as e:
        raise ValueError(f"{source}: cannot decode the file as {enc} (byte {e.start}: {e.reason}); "
                         "declare its encoding in the XML declaration or save it as UTF-8") from None


def clean_text(text: str) -> str:
    """Drop a byte-order mark and blank out the XML declaration (already applied: the text is
    decoded), so that whitespace before it parses and line numbers stay those of the file."""
    text = text.removeprefix("\ufeff")
    m = _DECLARATION.match(text)
    if m is not None:
        decl = "".join(c if c == "\n" else " " for c in m.group(2))
        text = m.group(1) + decl + text[m.end():]
    return text


def check_path(path_or_xml, kind: str) -> pathlib.Path:
    """``path_or_xml`` as an existing file's path: ``FileNotFoundError`` if nothing is there,
    ``IsADirectoryError`` for a directory, ``TypeError`` for what is not a path."""
    if not isinstance(path_or_xml, (str, os.PathLike)):
        raise TypeError(f"expected a file path or an XML string, got {type(path_or_xml).__name__}")
    path = pathlib.Path(path_or_xml)
    if path.is_dir():
        raise IsADirectoryError(f"{kind} path {str(path)!r} is a directory, not a file")
    if not path.is_file():
        raise FileNotFoundError(f"{kind} file not found: {str(path)!r}")
    return path


def read_source(path_or_xml, kind: str) -> tuple[str, str, pathlib.Path | None]:
    """Return ``(text, source name, path or None)`` of a path, XML bytes or an XML string.

    Bytes and files are decoded with :func:`decode`; the text is passed through
    :func:`clean_text`.  Errors name the file (or ``<kind string>``)."""
    if isinstance(path_or_xml, (bytes, bytearray)):
        source = f"<{kind} string>"
        return clean_text(decode(bytes(path_or_xml), source)), source, None
    if looks_like_xml(path_or_xml):
        return clean_text(path_or_xml), f"<{kind} string>", None
    path = check_path(path_or_xml, kind)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise OSError(f"{kind} file {str(path)!r} cannot be read: {e.strerror or e}") from None
    return clean_text(decode(data, str(path))), str(path), path


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
