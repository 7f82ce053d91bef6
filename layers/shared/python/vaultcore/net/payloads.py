"""Bounded parsing of request and response bodies handled by the proxy and the postback sender.

Bodies come from partners and from third-party targets: both are untrusted. Every parser here has a size
cap, and each format its own structural bound:

* JSON (:func:`parse_json_bounded`): byte cap, nesting depth cap, array length cap; ``NaN``/``Infinity``
  refused (not JSON, and they would not round-trip). Deep nesting is refused *before* parsing, so the C
  decoder never recurses towards the interpreter's limit (CWE-400, CWE-674).
* XML (:func:`parse_xml_safe`): any ``DOCTYPE`` refused outright, on the bytes before parsing and again
  on the parsed document (OWASP XXE Prevention Cheat Sheet, CWE-611 external entities, CWE-776 "billion
  laughs"): refusing the DOCTYPE is the one rule that covers every entity trick. Underneath, lxml with one
  parser configured once -- no entity resolution, no DTD loading, no network, no huge trees, and a resolver
  that answers external lookups with nothing. Only ASCII-compatible encodings are accepted, so the byte
  scan cannot be dodged with UTF-16 or UTF-7.
* Forms (:func:`parse_form`): field-count cap, order and duplicates kept, strict UTF-8.

Errors are :class:`PayloadError` (a ``ValueError``) with fixed messages: the body, which may carry card
data, is never echoed.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from itertools import accumulate
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

from vaultcore.lazy_re import lazy

if TYPE_CHECKING:
    from collections.abc import Iterable

    from lxml import etree

__all__ = [
    "DEFAULT_MAX_BYTES",
    "PayloadError",
    "parse_json_bounded",
    "json_depth",
    "find_lone_surrogate",
    "parse_xml_safe",
    "serialize_xml",
    "parse_form",
    "serialize_form",
]

DEFAULT_MAX_BYTES = 1_048_576

# The structure of JSON text: escapes are dropped (a JSON escape is always a backslash and one character, the
# "u" of \uXXXX included), then everything but quotes, brackets and commas; what lies between two quotes was a
# string. What is left is exactly the text's brackets and commas outside strings, in order (bytes.translate,
# bytes.replace and re.sub run in C: no Python work per value).
_KEEP_STRUCTURE = b'"[]{},'
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in _KEEP_STRUCTURE)
_ESCAPE = lazy(rb"\\.", re.DOTALL)
_STRING = lazy(rb'"[^"]*"')
_DEPTH_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
# A container holding no container: an array is "[" + one comma per element after the first + "]".
_INNERMOST = lazy(rb"\[,*\]|\{,*\}")
# A \uD800-\uDFFF escape: the only way a lone surrogate gets into decoded JSON text (raw UTF-8 cannot carry one;
# a well-formed pair decodes to one code point, only an unpaired one survives as a surrogate).
_SURROGATE_ESCAPE = lazy(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
# A DOCTYPE is refused on the bytes, before libxml2 parses any of it. That scan is only sound when markup
# is ASCII in the bytes, so documents must be in an ASCII-compatible encoding: no UTF-16/32 (NUL bytes,
# which XML forbids as characters, betray them), no UTF-7/EBCDIC (declared encoding allowlist, and the
# document must start with "<").
_DOCTYPE = lazy(rb"<!DOCTYPE", re.IGNORECASE)
_ENTITY_DECL = lazy(rb"<!ENTITY", re.IGNORECASE)
_XML_START = lazy(rb"^(?:\xef\xbb\xbf)?[ \t\r\n]*<")
_DECLARED_ENCODING = lazy(rb"^(?:\xef\xbb\xbf)?<\?xml[^>]*?encoding\s*=\s*[\"']([^\"']*)[\"']")
_ASCII_COMPATIBLE_ENCODINGS = frozenset(
    {"utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "latin1", "latin-1", "iso-8859-15", "windows-1252", "cp1252"}
)


class PayloadError(ValueError):
    """The body is malformed or exceeds a structural bound. The message never contains the body."""


def _to_bytes(body: bytes | bytearray | memoryview | str, max_bytes: int) -> bytes:
    if isinstance(body, str):
        body = body.encode("utf-8")
    elif not isinstance(body, bytes | bytearray | memoryview):
        raise PayloadError("Body must be bytes.")
    body = bytes(body)
    if len(body) > max_bytes:
        raise PayloadError("Body is too large.")
    return body


# --------------------------------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------------------------------


def _refuse_constant(_name: str) -> Any:
    raise PayloadError("JSON body is invalid.")


def parse_json_bounded(
    body: bytes | str,
    max_depth: int = 32,
    max_array: int = 10_000,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Any:
    """Parse a JSON body, or raise :class:`PayloadError`.

    ``max_depth`` counts nested arrays/objects (``[]`` is depth 1); ``max_array`` is the largest allowed
    array length (objects with many members are bounded by ``max_bytes``). Both are read on the text's structure
    (:func:`json_depth`), which is exact for valid JSON: no walk over the parsed value.
    """
    data = _to_bytes(body, max_bytes)
    structure = _structure(data)
    # Depth is checked on the raw text first, so the decoder never recurses deeper than max_depth.
    if _depth(structure) > max_depth:
        raise PayloadError("JSON body is nested too deeply.")
    try:
        # RFC 8259: JSON exchanged between systems is UTF-8; json.loads(bytes) would also guess UTF-16/32.
        value = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
    except PayloadError:
        raise
    except (ValueError, RecursionError):
        # ValueError covers JSONDecodeError, UnicodeDecodeError and over-long integer literals.
        raise PayloadError("JSON body is invalid.") from None
    if _array_over(structure, max_array) if max_array > 0 else _has_element(value):
        raise PayloadError("JSON array is too long.")
    if b"\\u" in data and _SURROGATE_ESCAPE.search(data) and find_lone_surrogate(value):
        # RFC 8259 §8.2: such a string cannot be encoded as UTF-8; forwarding or storing it would fail later.
        raise PayloadError("JSON body holds a lone surrogate.")
    return value


def _structure(data: bytes) -> bytes:
    """The brackets and commas of JSON text outside its strings, in order (exact for valid JSON; for other text a
    sequence the decoder refuses anyway, and exact up to the point where the text stops being valid, so a decoder
    never nests deeper than :func:`json_depth` says)."""
    if b"\\" in data:
        data = _ESCAPE.sub(b"", data)
    # Two adjacent quotes are an empty string or the end of one string and the start of the next (what separated
    # them was no structure): dropping them changes nothing outside strings, and leaves few quotes to pair.
    kept = data.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' not in kept:
        return kept
    return _STRING.sub(b"", kept).replace(b'"', b"")  # an unpaired quote: text the decoder refuses


def _depth(structure: bytes) -> int:
    brackets = structure.replace(b",", b"")
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets))) if brackets else 0


@lru_cache(maxsize=8)
def _long_array(max_array: int) -> re.Pattern[bytes]:
    return re.compile(rb"\[,{%d,}\]" % max_array)  # an array of more than max_array elements, holding no container


def _array_over(structure: bytes, max_array: int) -> bool:
    """Whether an array of the (valid) JSON text whose :func:`_structure` this is has more than ``max_array`` (at
    least 1) elements. Innermost containers are dropped level by level (as many passes as the depth, already
    bounded), each array being checked once it holds no container any more: its commas then count its elements.
    With fewer commas in all than ``max_array``, no array can be over it."""
    if structure.count(b",") < max_array:
        return False
    too_long = _long_array(max_array)
    while structure:
        if too_long.search(structure):
            return True
        inner = _INNERMOST.sub(b"", structure)
        if len(inner) == len(structure):
            return False  # unbalanced: not valid JSON (the decoder refused it already)
        structure = inner
    return False


def _has_element(value: Any) -> bool:
    """Whether a decoded JSON value holds a non-empty array (``max_array`` 0: the structure cannot tell ``[]`` from
    ``[1]``)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            if node:
                return True
        elif isinstance(node, dict):
            stack.extend(node.values())
    return False


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays/objects in JSON text, counted on the bytes (``[]`` is 1): strings are
    dropped first (:func:`_structure`), then bytes.replace and itertools.accumulate run in C, with no recursion."""
    return _depth(_structure(data))


def find_lone_surrogate(value: Any) -> bool:
    """Whether a decoded JSON value holds a string (or key) with an unpaired surrogate (iterative walk)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


# --------------------------------------------------------------------------------------------------------------
# XML
# --------------------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _xml_parser() -> etree.XMLParser:
    """The one parser, built on first use (lxml is imported lazily). lxml serialises concurrent use of a
    parser with a lock on its context, so one shared parser is safe across threads."""
    from lxml import etree

    class _DenyAllResolver(etree.Resolver):
        # Defence in depth: any lookup lxml routes through its resolvers (external subset, external entity)
        # gets an empty document, never a file, FIFO or URL.
        def resolve(self, system_url: str, public_id: str, context: Any) -> Any:
            return self.resolve_empty(context)

    parser = etree.XMLParser(
        resolve_entities=False,  # never expand entities, internal or external (XXE, billion laughs)
        no_network=True,  # never fetch anything while parsing
        dtd_validation=False,
        load_dtd=False,  # never load an external DTD
        huge_tree=False,  # keep libxml2's depth and text-size limits
        # collect_ids stays at its default: with collect_ids=False, lxml 6.1 was seen to open a local external
        # DTD subset without consulting the resolvers (a FIFO hung the parse). A unit test guards this.
        strip_cdata=False,  # CDATA sections round-trip unchanged
        remove_blank_text=False,
        recover=False,
    )
    parser.resolvers.add(_DenyAllResolver())
    return parser


def parse_xml_safe(body: bytes | str, max_bytes: int = DEFAULT_MAX_BYTES) -> etree._ElementTree:
    """Parse an XML body into an lxml tree, or raise :class:`PayloadError`.

    Any DOCTYPE (hence any entity declaration) is refused; processing instructions and comments are kept.
    """
    from lxml import etree

    data = _to_bytes(body, max_bytes)
    if b"\x00" in data or not _XML_START.match(data):
        raise PayloadError("XML body must use an ASCII-compatible encoding.")
    declared = _DECLARED_ENCODING.match(data)
    if declared and declared.group(1).decode("ascii", "replace").lower() not in _ASCII_COMPATIBLE_ENCODINGS:
        raise PayloadError("XML body must use an ASCII-compatible encoding.")
    if _DOCTYPE.search(data) or _ENTITY_DECL.search(data):
        raise PayloadError("XML body must not contain a DOCTYPE.")
    try:
        root = etree.fromstring(data, _xml_parser())
    except (etree.XMLSyntaxError, ValueError, MemoryError):
        # libxml2's message may quote the document: it is not passed on.
        raise PayloadError("XML body is invalid.") from None
    if root is None:
        raise PayloadError("XML body is invalid.")
    tree = root.getroottree()
    docinfo = tree.docinfo
    if docinfo.doctype or docinfo.internalDTD is not None or docinfo.externalDTD is not None:
        raise PayloadError("XML body must not contain a DOCTYPE.")
    return tree


def serialize_xml(tree: etree._ElementTree | etree._Element) -> bytes:
    """Serialise a tree from :func:`parse_xml_safe`, with its XML declaration if the input had one.

    lxml reports ``docinfo.standalone`` as ``None`` exactly when the document had no declaration; the
    original encoding and ``standalone`` flag are kept.
    """
    from lxml import etree

    if isinstance(tree, etree._Element):
        tree = tree.getroottree()
    docinfo = tree.docinfo
    encoding = docinfo.encoding or "UTF-8"
    if docinfo.standalone is None:
        # No declaration in the input: emit none. Only UTF-8 can then be decoded by the receiver.
        return etree.tostring(tree, encoding="UTF-8", xml_declaration=False)
    kwargs: dict[str, Any] = {"encoding": encoding, "xml_declaration": True}
    if docinfo.standalone:
        kwargs["standalone"] = True
    return etree.tostring(tree, **kwargs)


# --------------------------------------------------------------------------------------------------------------
# Forms
# --------------------------------------------------------------------------------------------------------------


def parse_form(
    body: bytes | str,
    *,
    max_fields: int = 1000,
    max_bytes: int = DEFAULT_MAX_BYTES,
    encoding: str = "utf-8",
) -> list[tuple[str, str]]:
    """Parse ``application/x-www-form-urlencoded`` keeping order, duplicates and blank values."""
    data = _to_bytes(body, max_bytes)
    try:
        text = data.decode(encoding)
        return parse_qsl(
            text,
            keep_blank_values=True,
            strict_parsing=False,
            encoding=encoding,
            errors="strict",
            max_num_fields=max_fields,
            separator="&",
        )
    except UnicodeDecodeError:
        raise PayloadError("Form body is not valid text.") from None
    except ValueError:
        # parse_qsl raises ValueError when max_num_fields is exceeded.
        raise PayloadError("Form body has too many fields.") from None


def serialize_form(pairs: Iterable[tuple[str, str]], *, encoding: str = "utf-8") -> bytes:
    """Serialise pairs as ``application/x-www-form-urlencoded`` (order and duplicates kept)."""
    return urlencode(list(pairs), encoding=encoding).encode("ascii")
