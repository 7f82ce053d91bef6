"""Locating and rewriting values in a proxied message: JSON, XML, URL-form and text bodies, headers, query.

A configured place is a :class:`CompiledPath` (``transformationSource`` + ``transformationType`` +
``transformationPath``), compiled once when the configuration is validated and cached with it:

* ``body`` + ``jsonpath``: a JSON body, or a URL-form body seen as a flat object whose members are the fields
  (``$.card_number``; a field sent twice is an array). jsonpath-ng's parser, restricted to a subset: root, child
  names (dotted or bracketed), indices, slices, wildcards and at most two descendant (``..``) steps. Filters,
  unions, ``parent``/``this`` and other extensions are refused. Evaluated lazily by
  :func:`vaultcore.proxy.pathwalk.find_json` (jsonpath-ng's matches, under the request's budget).
* ``body`` + ``xpath``: an XML body. lxml XPath 1.0 restricted to location paths: child and descendant steps,
  name tests, ``*``, ``text()`` and ``@attribute`` (last step), and predicates ``[n]``, ``[last()]``,
  ``[@a='v']``, ``[name='v']`` and ``[local-name()='v']`` (namespaced documents). Anything else (functions,
  axes, nested predicates) could make one evaluation quadratic or worse and is refused; a path with two ``//``
  steps runs in two parts (:class:`vaultcore.proxy.pathwalk.BoundedXPath`), so that it stays linear too.
* ``body`` + ``regex``: any body, as text. The partner's pattern runs in the bounded engine of
  :mod:`vaultcore.net.safe_regex` (compiled and probed on adversarial 1 MiB inputs when configured, a time limit
  on every call). The value is the named group ``value`` if the pattern has one, else group 1 if
  it has groups, else the whole match. Replacements are escaped for the body's format (JSON string, XML text,
  form encoding) so a substituted value cannot break out of its place.
* ``header`` / ``query`` + ``key``: a header (case-insensitive) or query parameter name. A header or query key
  sent more than once is one value per occurrence: a substitution or a mask rewrites *every* occurrence, each
  in place (the order of the values is kept).

URL-form data carried in the query string (interface.md: "URL-form data may also be carried in the query
string"): when the request has no body, ``body`` + ``jsonpath``/``regex`` address the query string as they would
address a URL-form body (the flat-object view, or the form-encoded text); what they write goes back into the
query parameters (:meth:`Message.addressed_body`, :meth:`Message.settle`). ``xpath`` never addresses it.

A path that matches nothing is *skipped*: substitutions and masks simply do not apply (documented; the proxy
reports the substitutions that matched nothing and refuses a request whose ``required`` one did). A match
holding an object or an array is an error for a substitution (8106) and masked whole for a log mask.

All body work (regex searches, jsonpath and xpath evaluation) is charged to the request's budget for pattern work
(:data:`PATTERN_BUDGET`, :func:`locate`): 8109 when it runs out.

Nothing here logs, and no error message quotes a value (values are card data).

:class:`CompiledPath`, :class:`Message` and :class:`Splicer` are written by hand for a measured cold start reason
(:mod:`vaultcore.plain`: a dataclass costs 0.4-2 ms to create on python3.13; docs/design/benchmarks.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote_plus, urlencode

from vaultcore.lazy_re import lazy
from vaultcore.net import deadline, payloads
from vaultcore.net.safe_regex import BoundedPattern, RegexBudgetExhausted, RegexTimeout, UnsafeRegex, compile_bounded
from vaultcore.plain import FrozenIdentity, Mutable, init
from vaultcore.proxy import errors as E
from vaultcore.proxy import pathwalk

__all__ = [
    "SOURCES",
    "TYPES",
    "MAX_MATCHES",
    "PathError",
    "CompiledPath",
    "compile_path",
    "Body",
    "Headers",
    "Message",
    "Slot",
    "locate",
    "body_kind",
    "mask_message",
    "xml_escape",
]

SOURCES = ("body", "header", "query")
TYPES = ("jsonpath", "xpath", "key", "regex")
#: At most this many values per path and message (a wildcard over a 10,000-element array is refused, not looped).
MAX_MATCHES = 1000
MAX_PATH_LENGTH = 512
_MAX_DESCENDANTS = 2
_MAX_XPATH_STEPS = 16

# Body limits (interface.md "Limits": not shown; ours, documented in docs/integrators/proxy.md).
MAX_JSON_DEPTH = 32
MAX_JSON_ARRAY = 10_000
MAX_FORM_FIELDS = 1000

#: Seconds of partner-supplied pattern work per request: every regex search and jsonpath/xpath evaluation of the
#: configuration's substitutions and masks (request, response, handled-error) together (docs/integrators/proxy.md
#: "Proxy error codes", 8109). :func:`locate` charges it; the proxy starts one per request
#: (:mod:`vaultcore.net.deadline`).
PATTERN_BUDGET = 2.0


_XML_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"})


def xml_escape(value: str) -> str:
    """XML character escaping for text and attribute values (xml.sax.saxutils would import urllib.request: 20 ms
    of cold start)."""
    return value.translate(_XML_ESCAPES)


class PathError(ValueError):
    """A path refused at configuration time; ``code`` is 8201 (path) or 8202 (regex)."""

    def __init__(self, message: str, code: int = E.CONFIG_PATH_INVALID) -> None:
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------------------------------------------- compiling

_HEADER_NAME = lazy(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$")
_NAME = r"[A-Za-z_][\w.\-]*"
_LITERAL = r"(?:'[^']*'|\"[^\"]*\")"
_PREDICATE = (
    rf"\[\s*(?:[1-9][0-9]{{0,5}}|last\(\)|@{_NAME}\s*=\s*{_LITERAL}|{_NAME}\s*=\s*{_LITERAL}"
    rf"|local-name\(\)\s*=\s*{_LITERAL})\s*\]"
)
_XPATH_STEP = lazy(rf"(?P<sep>//?)(?P<test>text\(\)|{_NAME}|\*|@{_NAME}|@\*)(?P<preds>(?:{_PREDICATE})*)")


class CompiledPath(FrozenIdentity):
    """One configured place, compiled. ``key`` is the lower-cased header name or the query parameter name."""

    __slots__ = ("source", "type", "path", "jsonpath", "xpath", "regex", "regex_group", "key")
    source: str
    type: str
    path: str
    jsonpath: Any
    xpath: Any
    regex: BoundedPattern | None
    regex_group: int | str
    key: str | None

    def __init__(self, source: str, type: str, path: str, jsonpath: Any = None, xpath: Any = None,
                 regex: BoundedPattern | None = None, regex_group: int | str = 0, key: str | None = None) -> None:
        init(self, source=source, type=type, path=path, jsonpath=jsonpath, xpath=xpath, regex=regex,
             regex_group=regex_group, key=key)

    @property
    def is_body(self) -> bool:
        return self.source == "body"

    @property
    def is_structural(self) -> bool:
        return self.type in ("jsonpath", "xpath")

    def describe(self) -> dict[str, str]:
        return {"transformationSource": self.source, "transformationType": self.type,
                "transformationPath": self.path}


def _compile_jsonpath(path: str) -> Any:
    from jsonpath_ng import jsonpath as jp
    from jsonpath_ng import parse as jp_parse
    from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError

    try:
        expr = jp_parse(path)
    except (JsonPathLexerError, JsonPathParserError, ValueError, TypeError, AttributeError, IndexError):
        raise PathError("does not compile as jsonpath") from None
    except Exception:  # noqa: BLE001 - the ply parser raises bare Exception on some inputs
        raise PathError("does not compile as jsonpath") from None
    descendants = 0
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, jp.Child):
            stack.extend((node.left, node.right))
        elif isinstance(node, jp.Descendants):
            descendants += 1
            stack.extend((node.left, node.right))
        elif isinstance(node, jp.Fields):
            if not node.fields or any(not isinstance(f, str) or not f for f in node.fields):
                raise PathError("has an empty member name")
        elif isinstance(node, (jp.Root, jp.Index, jp.Slice, jp.Wildcard)):
            continue
        else:
            raise PathError("uses a jsonpath construct outside the supported subset (names, indices, slices, "
                            "wildcards, '..')")
    if descendants > _MAX_DESCENDANTS:
        raise PathError(f"uses more than {_MAX_DESCENDANTS} descendant ('..') steps")
    if isinstance(expr, jp.Root):
        raise PathError("must select a member, not the whole document")
    return expr


def _compile_xpath(path: str) -> Any:
    text = path.strip()
    if not text.startswith("/"):
        text = "/" + text  # "payment/card/number" is read from the root, like a dotted jsonpath
    pos, steps, descendant_steps = 0, [], 0
    while pos < len(text):
        m = _XPATH_STEP.match(text, pos)
        if m is None:
            raise PathError("uses an xpath construct outside the supported subset (location steps with names, '*', "
                            "text(), @attribute and simple predicates)")
        steps.append(m)
        descendant_steps += m.group("sep") == "//"
        pos = m.end()
    if len(steps) > _MAX_XPATH_STEPS:
        raise PathError(f"has more than {_MAX_XPATH_STEPS} steps")
    if descendant_steps > _MAX_DESCENDANTS:
        raise PathError(f"uses more than {_MAX_DESCENDANTS} descendant ('//') steps")
    for m in steps[:-1]:
        if m.group("test") == "text()" or m.group("test").startswith("@"):
            raise PathError("may use text() or @attribute only in its last step")
    from lxml import etree

    # Two '//' steps are evaluated in two parts, the second from each node the first finds (bounded work:
    # vaultcore.proxy.pathwalk.BoundedXPath).
    split = [m.start() for m in steps if m.group("sep") == "//"][1:2]
    try:
        return pathwalk.BoundedXPath(text, split[0] if split else None)
    except etree.XPathError:
        raise PathError("does not compile as xpath") from None


def compile_path(source: str, type_: str, path: str) -> CompiledPath:
    """Compile a configured place; raises :class:`PathError` naming the rule (never echoing the path)."""
    if not isinstance(path, str) or not path.strip():
        raise PathError("must be a non-empty string", E.CONFIG_INVALID)
    if len(path) > MAX_PATH_LENGTH:
        raise PathError(f"must be at most {MAX_PATH_LENGTH} characters", E.CONFIG_INVALID)
    if type_ == "jsonpath":
        return CompiledPath(source, type_, path, jsonpath=_compile_jsonpath(path))
    if type_ == "xpath":
        return CompiledPath(source, type_, path, xpath=_compile_xpath(path))
    if type_ == "regex":
        try:
            pattern = compile_bounded(path)
        except UnsafeRegex as exc:
            message = str(exc).rstrip(".")
            raise PathError(message[:1].lower() + message[1:], E.CONFIG_REGEX_UNSAFE) from None
        if "value" in pattern.groupindex:
            group: int | str = "value"
        else:
            group = 1 if pattern.groups else 0
        return CompiledPath(source, type_, path, regex=pattern, regex_group=group)
    if type_ == "key":
        if source == "header":
            if not _HEADER_NAME.match(path):
                raise PathError("must be a valid header name", E.CONFIG_INVALID)
            return CompiledPath(source, type_, path, key=path.lower())
        if len(path) > 256 or any(ord(c) < 0x20 for c in path):
            raise PathError("must be a query parameter name (at most 256 printable characters)", E.CONFIG_INVALID)
        return CompiledPath(source, type_, path, key=path)
    raise PathError("has an unknown transformationType", E.CONFIG_INVALID)


# ---------------------------------------------------------------------------------------------------- bodies

_JSON_TYPES = ("application/json", "text/json")
_XML_TYPES = ("application/xml", "text/xml")
_FORM_TYPE = "application/x-www-form-urlencoded"


def body_kind(content_type: str | None, body: bytes) -> str:
    """``none`` (empty body), ``json``, ``xml``, ``form`` or ``text`` (any other media type) from the header."""
    if not body:
        return "none"
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in _JSON_TYPES or media.endswith("+json"):
        return "json"
    if media in _XML_TYPES or media.endswith("+xml"):
        return "xml"
    if media == _FORM_TYPE:
        return "form"
    return "text"


_PAYLOAD_CODES = {
    "Body is too large.": E.PAYLOAD_TOO_LARGE,
    "JSON body is nested too deeply.": E.PAYLOAD_TOO_LARGE,
    "JSON array is too long.": E.PAYLOAD_TOO_LARGE,
    "Form body has too many fields.": E.PAYLOAD_TOO_LARGE,
    "XML body must not contain a DOCTYPE.": E.XML_DOCTYPE_REFUSED,
}


def _payload_error(exc: payloads.PayloadError) -> E.ProxyError:
    message = str(exc)
    return E.ProxyError(message, code=_PAYLOAD_CODES.get(message, E.PAYLOAD_INVALID))


class _FormView(dict):
    """A URL-form body as a flat object for jsonpath (``name -> value``, or a list when a name repeats)."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        super().__init__()
        self.order = [name for name, _ in pairs]
        for name, value in pairs:
            if name in self:
                current = self[name]
                self[name] = (current if isinstance(current, list) else [current]) + [value]
            else:
                self[name] = value

    def pairs(self) -> list[tuple[str, str]]:
        seen: dict[str, int] = {}
        out = []
        for name in self.order:
            value = self.get(name)
            if isinstance(value, list):
                k = seen.get(name, 0)
                seen[name] = k + 1
                value = value[k] if k < len(value) else ""
            out.append((name, _scalar_text(value)))
        return out


def _scalar_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


class Body:
    """A body with two views kept coherent: the parsed tree (JSON value, lxml tree, form view) and the text.

    Parsing is bounded (:mod:`vaultcore.net.payloads`). Unmodified bodies are forwarded byte for byte.
    """

    def __init__(self, raw: bytes, kind: str, *, max_bytes: int = payloads.DEFAULT_MAX_BYTES) -> None:
        self.raw = raw
        self.kind = kind
        self.max_bytes = max_bytes
        self.modified = False
        self._tree: Any = None
        self._has_tree = False
        self._text: str | None = None
        self._bytes: bytes | None = None  # the last serialization, reused until the body changes again
        #: Writes to a borrowed tree, to undo (:meth:`borrow`); None for a body that owns its tree.
        self.journal: list[tuple[Any, ...]] | None = None

    def borrow(self) -> Body:
        """A body over this one's current content and parsed tree, neither copied nor parsed again (log masks over
        what is forwarded: :mod:`vaultcore.proxy.logs`). Its slots journal every write to the shared tree;
        :meth:`restore` undoes them, leaving this body as it was. Without a current tree (a body that is not
        JSON, XML or form, or that a regex rewrote) it is a new body over the same bytes."""
        twin = Body(self.to_bytes(), self.kind, max_bytes=self.max_bytes)
        if self._has_tree:
            twin._tree, twin._has_tree, twin.journal = self._tree, True, []
        return twin

    def restore(self) -> None:
        """Undo the writes a borrowed body made to the tree it shares (newest first)."""
        journal, self.journal = self.journal, None
        for entry in reversed(journal or ()):
            _undo(entry)

    # -- views -----------------------------------------------------------------------------------------------

    def parse(self) -> Body:
        """Parse eagerly (JSON, XML, form); raises :class:`ProxyError` 8100/8101/8108."""
        if self.kind in ("json", "xml", "form"):
            self.tree()
        return self

    def tree(self) -> Any:
        if not self._has_tree:
            source = self.raw if self._text is None else self._text.encode("utf-8")
            try:
                if self.kind == "json":
                    self._tree = payloads.parse_json_bounded(source, MAX_JSON_DEPTH, MAX_JSON_ARRAY, self.max_bytes)
                elif self.kind == "xml":
                    self._tree = payloads.parse_xml_safe(source, self.max_bytes)
                elif self.kind == "form":
                    self._tree = _FormView(payloads.parse_form(source, max_fields=MAX_FORM_FIELDS,
                                                               max_bytes=self.max_bytes))
                else:
                    raise E.ProxyError("The body has no structure to address.", code=E.CONTENT_TYPE_UNSUPPORTED)
            except payloads.PayloadError as exc:
                if self._text is not None:
                    raise E.ProxyError("The body no longer parses after a regex substitution.",
                                       code=E.VALUE_NOT_SUBSTITUTABLE) from None
                raise _payload_error(exc) from None
            self._has_tree = True
        return self._tree

    def text(self) -> str:
        if self._text is None:
            if self._has_tree and self.modified:
                self._text = self._serialize_tree().decode("utf-8")
            else:
                try:
                    self._text = self.raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise E.ProxyError("The body is not UTF-8 text.", code=E.PAYLOAD_INVALID) from None
        return self._text

    def tree_changed(self) -> None:
        """The tree was written: the text view is stale."""
        self.modified = True
        self._text = None
        self._bytes = None

    def set_text(self, text: str) -> None:
        """The text was rewritten (regex): the tree view is stale and is re-parsed when next needed."""
        self.modified = True
        self._text = text
        self._bytes = None
        self._has_tree = False
        self._tree = None

    def _serialize_tree(self) -> bytes:
        if self.kind == "json":
            return json.dumps(self._tree, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if self.kind == "xml":
            return payloads.serialize_xml(self._tree)
        if self.kind == "form":
            return payloads.serialize_form(self._tree.pairs())
        raise AssertionError("no tree")

    def to_bytes(self) -> bytes:
        if not self.modified:
            return self.raw
        if self._bytes is None:
            self._bytes = self._text.encode("utf-8") if self._text is not None else self._serialize_tree()
        return self._bytes

    def escape(self, value: str) -> str:
        """``value`` escaped for splicing into this body's text (regex substitutions)."""
        if self.kind == "json":
            return json.dumps(value, ensure_ascii=False)[1:-1]
        if self.kind == "xml":
            return xml_escape(value)
        if self.kind == "form":
            return quote_plus(value)
        return value


class Headers:
    """Header fields in order, names lower-cased; a name may repeat (one entry per occurrence, as received).

    Reads as a mapping of one value per name (``get``/``[]`` give the last occurrence, like API Gateway's
    single-value ``headers``); ``items()`` gives every occurrence; ``[name] = value`` replaces all occurrences
    of ``name`` by one (at the first one's place) or appends it.
    """

    __slots__ = ("_pairs",)

    def __init__(self, items: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        pairs = items.items() if isinstance(items, Mapping) else items
        self._pairs: list[tuple[str, str]] = [(str(k).lower(), str(v)) for k, v in pairs]

    def items(self) -> list[tuple[str, str]]:
        return list(self._pairs)

    def indices(self, name: str) -> list[int]:
        return [i for i, (k, _v) in enumerate(self._pairs) if k == name]

    def value_at(self, index: int) -> str:
        return self._pairs[index][1]

    def set_at(self, index: int, value: str) -> None:
        self._pairs[index] = (self._pairs[index][0], value)

    def get_all(self, name: str) -> list[str]:
        name = name.lower()
        return [v for k, v in self._pairs if k == name]

    def get(self, name: str, default: str | None = None) -> str | None:
        values = self.get_all(name)
        return values[-1] if values else default

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __setitem__(self, name: str, value: str) -> None:
        name = name.lower()
        at = self.indices(name)
        if not at:
            self._pairs.append((name, value))
            return
        self._pairs[at[0]] = (name, value)
        for i in reversed(at[1:]):
            del self._pairs[i]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and any(k == name.lower() for k, _v in self._pairs)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(k for k, _v in self._pairs))

    def __len__(self) -> int:
        return len(self._pairs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Headers):
            return self._pairs == other._pairs
        if isinstance(other, Mapping):
            return self._pairs == [(str(k).lower(), str(v)) for k, v in other.items()]
        return NotImplemented

    def __repr__(self) -> str:
        return f"Headers({[k for k, _v in self._pairs]})"  # names only: values may be card data or secrets


class Message(Mutable):
    """A request to forward (or a response to log): headers (every occurrence), ordered query pairs and a body.

    ``query_form``: when the body is empty, ``body`` substitutions and masks (jsonpath, regex) address the query
    string as URL-form data (:meth:`addressed_body`); :meth:`settle` writes what they changed back into
    ``query``.
    """

    __slots__ = ("headers", "query", "body", "query_form", "_query_body", "_query_snapshot")
    _no_repr = _no_compare = frozenset({"_query_body", "_query_snapshot"})
    headers: Headers
    query: list[tuple[str, str]]
    body: Body
    query_form: bool
    _query_body: Body | None
    _query_snapshot: list[tuple[str, str]]

    def __init__(self, headers: Headers | Any, query: list[tuple[str, str]], body: Body, query_form: bool = True,
                 _query_body: Body | None = None, _query_snapshot: list[tuple[str, str]] | None = None) -> None:
        self.headers = headers if isinstance(headers, Headers) else Headers(headers)
        self.query = query
        self.body = body
        self.query_form = query_form
        self._query_body = _query_body
        self._query_snapshot = [] if _query_snapshot is None else _query_snapshot

    def addressed_body(self) -> Body:
        """The body ``body`` paths address: the body itself, or, when it is empty and the query string is not,
        the query string seen as a URL-form body (built on first use, kept until :meth:`settle`)."""
        if self.body.kind != "none" or not self.query_form or not self.query:
            return self.body
        if self._query_body is None:
            self._query_snapshot = list(self.query)
            self._query_body = Body(urlencode(self.query).encode("ascii"), "form", max_bytes=self.body.max_bytes)
        return self._query_body

    def settle(self) -> None:
        """Write what the query-string form view changed back into ``query``, and drop the view (it is rebuilt
        from the pairs when next needed).

        Only the pairs the view changed are written: ``query``/``key`` slots of the same action wrote the other
        pairs in place meanwhile. A regex that changed the number of fields replaces the whole query.
        """
        view, self._query_body = self._query_body, None
        if view is None or not view.modified:
            return
        before, after = self._query_snapshot, view.tree().pairs()
        if len(after) != len(before) or len(self.query) != len(before):
            self.query[:] = after
            return
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            if new != old:
                self.query[index] = new


# ---------------------------------------------------------------------------------------------------- slots


class Slot:
    """One located value. ``value`` is the raw value (JSON types for JSON bodies, else ``str``)."""

    value: Any

    def set(self, value: Any) -> None:
        raise NotImplementedError

    @property
    def text(self) -> str:
        return _scalar_text(self.value)


def _undo(entry: tuple[Any, ...]) -> None:
    kind, target, key, old = entry
    if kind == "json":
        target[key] = old
    elif kind == "text":
        target.text = old
    elif kind == "tail":
        target.tail = old
    else:
        target.set(key, old)


class _JsonSlot(Slot):
    __slots__ = ("container", "key", "value", "body")

    def __init__(self, container: Any, key: Any, body: Body) -> None:
        self.container, self.key, self.body = container, key, body
        self.value = container[key]

    def set(self, value: Any) -> None:
        if self.body.kind == "form" and not isinstance(value, str):
            value = _scalar_text(value)
        if self.body.journal is not None:
            self.body.journal.append(("json", self.container, self.key, self.container[self.key]))
        self.container[self.key] = value
        self.value = value
        self.body.tree_changed()


class _XmlSlot(Slot):
    __slots__ = ("node", "mode", "attr", "value", "body")

    def __init__(self, node: Any, mode: str, attr: str | None, value: str, body: Body) -> None:
        self.node, self.mode, self.attr, self.value, self.body = node, mode, attr, value, body

    def set(self, value: Any) -> None:
        text = _scalar_text(value)
        if self.body.journal is not None:
            node = self.node
            old = node.text if self.mode == "text" else node.tail if self.mode == "tail" else node.get(self.attr)
            self.body.journal.append((self.mode, node, self.attr, old))
        if self.mode == "text":
            self.node.text = text
        elif self.mode == "tail":
            self.node.tail = text
        else:
            self.node.set(self.attr, text)
        self.value = text
        self.body.tree_changed()


class _HeaderSlot(Slot):
    """One occurrence of a header (a repeated header has one slot per occurrence)."""

    __slots__ = ("headers", "index", "value")

    def __init__(self, headers: Headers, index: int) -> None:
        self.headers, self.index = headers, index
        self.value = headers.value_at(index)

    def set(self, value: Any) -> None:
        self.value = _scalar_text(value)
        self.headers.set_at(self.index, self.value)


class _QuerySlot(Slot):
    __slots__ = ("pairs", "index", "value")

    def __init__(self, pairs: list[tuple[str, str]], index: int) -> None:
        self.pairs, self.index = pairs, index
        self.value = pairs[index][1]

    def set(self, value: Any) -> None:
        self.value = _scalar_text(value)
        self.pairs[self.index] = (self.pairs[self.index][0], self.value)


class Splicer(Mutable):
    """Collects regex replacements on one text snapshot and applies them at once (right to left)."""

    __slots__ = ("body", "text", "edits")
    body: Body
    text: str
    edits: list[tuple[int, int, str]]

    def __init__(self, body: Body, text: str, edits: list[tuple[int, int, str]] | None = None) -> None:
        self.body, self.text, self.edits = body, text, [] if edits is None else edits

    def commit(self) -> None:
        if not self.edits:
            return
        self.edits.sort()
        for (_s1, e1, _), (s2, _e2, _) in zip(self.edits, self.edits[1:], strict=False):
            if s2 < e1:
                raise E.ProxyError("Two regex substitutions overlap in the body.", code=E.VALUE_NOT_SUBSTITUTABLE)
        parts, pos = [], 0
        for start, end, replacement in self.edits:
            parts.append(self.text[pos:start])
            parts.append(replacement)
            pos = end
        parts.append(self.text[pos:])
        self.body.set_text("".join(parts))
        self.edits.clear()


class _RegexSlot(Slot):
    __slots__ = ("splicer", "start", "end", "value")

    def __init__(self, splicer: Splicer, start: int, end: int) -> None:
        self.splicer, self.start, self.end = splicer, start, end
        self.value = splicer.text[start:end]

    def set(self, value: Any) -> None:
        self.value = _scalar_text(value)
        self.splicer.edits.append((self.start, self.end, self.splicer.body.escape(self.value)))


# ---------------------------------------------------------------------------------------------------- locating


def _too_many() -> E.ProxyError:
    return E.ProxyError(f"A configured path matches more than {MAX_MATCHES} values.", code=E.VALUE_NOT_SUBSTITUTABLE)


def _json_slots(cpath: CompiledPath, body: Body) -> Iterator[Slot]:
    # jsonpath-ng's matches, in its order, walked lazily under the request's budget (vaultcore.proxy.pathwalk).
    for container, key in pathwalk.find_json(cpath.jsonpath, body.tree()):
        yield _JsonSlot(container, key, body)


def _xml_slots(cpath: CompiledPath, body: Body) -> Iterator[Slot]:
    from lxml import etree

    for node in cpath.xpath(body.tree()):
        if isinstance(node, etree._Element):
            if isinstance(node.tag, str):  # comments and processing instructions are not values
                yield _XmlSlot(node, "text", None, node.text or "", body)
        elif getattr(node, "is_attribute", False):
            yield _XmlSlot(node.getparent(), "attr", node.attrname, str(node), body)
        elif getattr(node, "is_tail", False):
            yield _XmlSlot(node.getparent(), "tail", None, str(node), body)
        elif getattr(node, "is_text", False):
            yield _XmlSlot(node.getparent(), "text", None, str(node), body)


def _budget_spent() -> E.ProxyError:
    return E.ProxyError(f"The configuration's patterns (regex, jsonpath, xpath) exceeded the request's time budget "
                        f"for pattern work ({PATTERN_BUDGET:g} s in all) on this body.", code=E.REGEX_TIMEOUT)


def locate(message: Message, cpath: CompiledPath, *, strict: bool = True,
           splicer: Splicer | None = None) -> list[Slot]:
    """Every value at ``cpath`` in ``message`` (empty when the path is absent: the caller skips it).

    ``strict`` (substitutions) raises 8107 when a jsonpath/xpath meets a body of another kind; masks pass
    ``strict=False`` and simply find nothing there. Regex slots of one action share ``splicer``. A repeated
    header or query key gives one slot per occurrence. With an empty body, jsonpath and regex address the query
    string as URL-form data (:meth:`Message.addressed_body`); xpath finds nothing there.

    Body paths are pattern work: charged to the request's budget (:data:`PATTERN_BUDGET`; a budget of their own
    outside a request), 8109 when it runs out, as when one regex search exceeds its own limit.
    """
    if not cpath.is_body:
        return _locate(message, cpath, strict=strict, splicer=splicer)
    with deadline.ensure(PATTERN_BUDGET) as budget, budget.metered():
        try:
            return _locate(message, cpath, strict=strict, splicer=splicer)
        except deadline.BudgetExhausted:
            raise _budget_spent() from None


def _locate(message: Message, cpath: CompiledPath, *, strict: bool, splicer: Splicer | None) -> list[Slot]:
    slots: list[Slot] = []
    if cpath.source == "header":
        for index in message.headers.indices(cpath.key or ""):
            slots.append(_HeaderSlot(message.headers, index))
        return slots[:MAX_MATCHES] if not strict else _bounded(slots)
    if cpath.source == "query":
        for index, (name, _value) in enumerate(message.query):
            if name == cpath.key:
                slots.append(_QuerySlot(message.query, index))
        return slots[:MAX_MATCHES] if not strict else _bounded(slots)
    body = message.addressed_body()
    if body.kind == "none" or (body is not message.body and cpath.type == "xpath"):
        return slots
    if cpath.type == "regex":
        if splicer is None:
            raise AssertionError("regex slots need a splicer")
        text = splicer.text
        assert cpath.regex is not None
        try:
            for match in _finditer(cpath.regex, text):
                start, end = match.span(cpath.regex_group)
                if start < 0:
                    continue
                slots.append(_RegexSlot(splicer, start, end))
                if len(slots) > MAX_MATCHES:
                    raise _too_many()
        except RegexBudgetExhausted:
            raise  # the request's budget, not this search: locate() answers for it
        except RegexTimeout:
            raise E.ProxyError("A configured regular expression took too long on this body.",
                               code=E.REGEX_TIMEOUT) from None
        return slots
    wanted = ("json", "form") if cpath.type == "jsonpath" else ("xml",)
    if body.kind not in wanted:
        if strict:
            raise E.ProxyError(f"The configuration addresses the body with {cpath.type}, which needs a "
                               f"{' or '.join(w.upper() if w != 'form' else 'URL-form' for w in wanted)} body "
                               f"(Content-Type).", code=E.CONTENT_TYPE_UNSUPPORTED)
        return slots
    finder = _json_slots if cpath.type == "jsonpath" else _xml_slots
    for slot in finder(cpath, body):
        slots.append(slot)
        if len(slots) > MAX_MATCHES:
            raise _too_many()
    return slots


def _bounded(slots: list[Slot]) -> list[Slot]:
    if len(slots) > MAX_MATCHES:
        raise _too_many()
    return slots


def _finditer(pattern: BoundedPattern, text: str) -> Iterator[Any]:
    """Non-overlapping matches, each search under the pattern's time budget."""
    pos, n = 0, len(text)
    while pos <= n:
        match = pattern.search(text, pos)
        if match is None:
            return
        yield match
        start, end = match.span()
        pos = end if end > start else end + 1


def new_splicer(message: Message) -> Splicer:
    body = message.addressed_body()
    return Splicer(body, body.text())


# ---------------------------------------------------------------------------------------------------- masking


def mask_message(message: Message, masks: list[tuple[CompiledPath, Callable[[str], str]]]) -> None:
    """Apply log masks in order; each mask rewrites every value its path finds (objects/arrays whole)."""
    for cpath, masker in masks:
        splicer = (new_splicer(message) if (cpath.type == "regex" and message.addressed_body().kind != "none")
                   else None)
        for slot in locate(message, cpath, strict=False, splicer=splicer):
            value = slot.value
            text = json.dumps(value, separators=(",", ":")) if isinstance(value, dict | list) else slot.text
            slot.set(masker(text))
        if splicer is not None:
            splicer.commit()
        message.settle()
