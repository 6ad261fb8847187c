"""include/yaok.h as data: every function prototype with its C types, parsed with pycparser,
and a checker that compares a ctypes declaration with it.

No C compiler is needed: a small preprocessor here removes comments, keeps the lines that
a C (not C++) compiler would see (#ifdef/#ifndef/#if defined(...)/#else/#endif), drops the
other directives, and puts typedefs for the <stdint.h>/<stddef.h>/<stdbool.h> names in
front. Their sizes are taken from ctypes, i.e. from the platform the tests run on. A
directive or macro it cannot handle is an error, never a silent skip.

Rules for matching a header type with a ctypes type (a mismatch is a bug in the binding):

* integers: the same size and signedness (``int64_t`` needs ``c_int64``; ``size_t`` needs an
  unsigned integer of ``sizeof(size_t)``, i.e. ``c_size_t``); ``bool`` needs ``c_bool``;
* ``void`` (result): ``None``;
* ``const char *``: ``c_char_p`` (a NUL-terminated string in or out);
* ``char *`` (a string the library hands back to be freed): ``c_void_p`` or
  ``POINTER(c_char)``; never ``c_char_p``, which would let C write into, or free, a Python
  ``bytes`` object;
* ``const uint8_t *`` (a borrowed input buffer): ``c_char_p``, ``c_void_p`` or
  ``POINTER(c_uint8)``; ``uint8_t *`` (written by C, or owned by the library):
  ``c_void_p``, ``POINTER(c_uint8)`` or ``POINTER(c_char)``; never ``c_char_p``;
* a pointer to any other integer: ``POINTER`` of exactly that integer (``size_t *`` is
  ``POINTER(c_size_t)``, ``uint32_t *`` is ``POINTER(c_uint32)``);
* ``void *``: ``c_void_p``;
* ``T **`` where ``T *`` is a library-allocated string or buffer: ``POINTER(c_void_p)`` (the
  binding keeps the address to free it) or ``POINTER`` of a type matching ``T *``;
* a pointer to ``struct yaok_x``: ``POINTER(S)`` where ``S`` is a ``ctypes.Structure`` named
  ``yaok_x``; if the header defines the struct's fields, ``S._fields_`` must match them
  field by field (names and types);
* a function pointer typedef: a ``CFUNCTYPE`` whose result and arguments match.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from pycparser import c_ast, c_parser

# ---- the C side -----------------------------------------------------------------------


@dataclass(frozen=True)
class Int:
    size: int
    signed: bool
    spelling: str


@dataclass(frozen=True)
class Bool:
    spelling: str = "bool"


@dataclass(frozen=True)
class Char:
    """Plain ``char`` (only meaningful behind a pointer: text)."""
    spelling: str = "char"


@dataclass(frozen=True)
class Void:
    spelling: str = "void"


@dataclass(frozen=True)
class Struct:
    tag: str
    fields: Optional[Tuple[Tuple[str, "CType"], ...]]  # None: opaque


@dataclass(frozen=True)
class Pointer:
    pointee: "CType"
    const_pointee: bool


@dataclass(frozen=True)
class Array:
    """A fixed-size array (a struct field); as a parameter it is a pointer, as in C."""
    element: "CType"
    length: int


@dataclass(frozen=True)
class FunctionPointer:
    result: "CType"
    params: Tuple[Tuple[str, "CType"], ...]
    spelling: str


CType = Union[Int, Bool, Char, Void, Struct, Pointer, Array, FunctionPointer]


@dataclass(frozen=True)
class Function:
    name: str
    result: CType
    params: Tuple[Tuple[str, CType], ...]


def _int_types() -> Dict[str, Int]:
    def of(name: str, ctype: Any, signed: bool) -> Tuple[str, Int]:
        return name, Int(ctypes.sizeof(ctype), signed, name)
    return dict([
        of("int8_t", ctypes.c_int8, True), of("int16_t", ctypes.c_int16, True),
        of("int32_t", ctypes.c_int32, True), of("int64_t", ctypes.c_int64, True),
        of("uint8_t", ctypes.c_uint8, False), of("uint16_t", ctypes.c_uint16, False),
        of("uint32_t", ctypes.c_uint32, False), of("uint64_t", ctypes.c_uint64, False),
        of("size_t", ctypes.c_size_t, False), of("ssize_t", ctypes.c_ssize_t, True),
        of("ptrdiff_t", ctypes.c_ssize_t, True), of("intptr_t", ctypes.c_ssize_t, True),
        of("uintptr_t", ctypes.c_size_t, False),
        of("signed char", ctypes.c_byte, True), of("unsigned char", ctypes.c_ubyte, False),
        of("short", ctypes.c_short, True), of("unsigned short", ctypes.c_ushort, False),
        of("int", ctypes.c_int, True), of("unsigned int", ctypes.c_uint, False),
        of("long", ctypes.c_long, True), of("unsigned long", ctypes.c_ulong, False),
        of("long long", ctypes.c_longlong, True), of("unsigned long long", ctypes.c_ulonglong, False),
    ])


INT_TYPES = _int_types()
# What <stdint.h>, <stddef.h> and <stdbool.h> would declare; the typedef targets only make
# the names parse: their meaning comes from INT_TYPES.
_PRELUDE_NAMES = [n for n in INT_TYPES if " " not in n and n not in ("short", "int", "long")] + ["bool"]
PRELUDE = "".join(f"typedef int {name};\n" for name in _PRELUDE_NAMES)

_BASE_SPELLINGS = {
    ("char",): "char", ("signed", "char"): "signed char", ("unsigned", "char"): "unsigned char",
    ("short",): "short", ("short", "int"): "short", ("signed", "short"): "short",
    ("unsigned", "short"): "unsigned short", ("unsigned", "short", "int"): "unsigned short",
    ("int",): "int", ("signed",): "int", ("signed", "int"): "int",
    ("unsigned",): "unsigned int", ("unsigned", "int"): "unsigned int",
    ("long",): "long", ("long", "int"): "long", ("signed", "long"): "long",
    ("unsigned", "long"): "unsigned long", ("unsigned", "long", "int"): "unsigned long",
    ("long", "long"): "long long", ("long", "long", "int"): "long long",
    ("unsigned", "long", "long"): "unsigned long long",
    ("unsigned", "long", "long", "int"): "unsigned long long",
    ("void",): "void", ("_Bool",): "bool",
}


class HeaderError(Exception):
    """The header uses something this parser does not understand."""


def preprocess(text: str, defined: Sequence[str] = ()) -> str:
    """The header as a C compiler's parser would see it, minus macros: comments removed,
    continuation lines joined, conditional blocks resolved (``__cplusplus`` is not defined),
    directives dropped. Line numbers are kept (dropped lines become empty)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    raw = text.split("\n")
    lines: List[str] = []
    i = 0
    while i < len(raw):
        line, joined = raw[i], 0
        while line.endswith("\\") and i + 1 < len(raw):
            i += 1
            joined += 1
            line = line[:-1] + " " + raw[i]
        lines.append(line)
        lines.extend([""] * joined)
        i += 1

    macros = set(defined)
    object_macros: Dict[str, str] = {}
    out: List[str] = []
    stack: List[Tuple[bool, bool]] = []  # (this branch is live, some branch was taken)
    for number, line in enumerate(lines, 1):
        live = all(frame[0] for frame in stack)
        stripped = line.strip()
        if not stripped.startswith("#"):
            out.append(line if live else "")
            continue
        out.append("")
        word, _, rest = stripped[1:].strip().partition(" ")
        rest = rest.strip()
        if word in ("ifdef", "ifndef"):
            on = live and (rest in macros) == (word == "ifdef")
            stack.append((on, on))
        elif word == "if":
            on = live and _condition(rest, macros)
            stack.append((on, on))
        elif word in ("elif", "else", "endif") and not stack:
            raise HeaderError(f"line {number}: #{word} without #if")
        elif word == "elif":
            _, taken = stack.pop()
            outer = all(frame[0] for frame in stack)
            on = outer and not taken and _condition(rest, macros)
            stack.append((on, taken or on))
        elif word == "else":
            _, taken = stack.pop()
            outer = all(frame[0] for frame in stack)
            stack.append((outer and not taken, True))
        elif word == "endif":
            stack.pop()
        elif not live:
            pass
        elif word == "define":
            m = re.match(r"(\w+)(\(?)\s*(.*)", rest)
            if not m:
                raise HeaderError(f"line {number}: cannot read #define {rest!r}")
            macros.add(m.group(1))
            object_macros[m.group(1)] = m.group(3)
        elif word == "undef":
            macros.discard(rest)
            object_macros.pop(rest, None)
        elif word == "error":
            raise HeaderError(f"line {number}: #error {rest}")
        elif word not in ("include", "pragma", "warning", "line", ""):
            raise HeaderError(f"line {number}: unknown directive #{word}")
    if stack:
        raise HeaderError("unbalanced #if/#endif")
    code = "\n".join(out)
    # A macro used in the code (e.g. an export attribute, a size in an array parameter)
    # would need real expansion: refuse it loudly rather than guess.
    # An integer constant used in the code (an array size such as YAOK_MESSAGE_ID_BYTES) is
    # replaced by its value. Any other macro there (an export attribute, say) would need
    # real expansion: refuse it loudly rather than guess.
    for name, body in object_macros.items():
        if not re.search(rf"\b{name}\b", code):
            continue
        number = re.fullmatch(r"\(?\s*(-?(?:0[xX][0-9a-fA-F]+|\d+))[uUlL]*\s*\)?", body.strip())
        if number is None:
            raise HeaderError(f"macro {name} is used in a declaration; this parser expands only "
                              f"integer constants, not {body.strip()!r}")
        code = re.sub(rf"\b{name}\b", str(int(number.group(1), 0)), code)
    return code


def _condition(expr: str, macros: set) -> bool:
    expr = re.sub(r"defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)",
                  lambda m: "1" if (m.group(1) or m.group(2)) in macros else "0", expr)
    expr = expr.replace("&&", " and ").replace("||", " or ").replace("!", " not ")
    if not re.fullmatch(r"[\s01()andortn]*", expr):
        raise HeaderError(f"#if {expr!r} is beyond this parser")
    return bool(eval(expr, {"__builtins__": {}}, {}))  # only 0, 1, and/or/not, brackets


class _Model:
    def __init__(self, ast: c_ast.FileAST) -> None:
        self.typedefs: Dict[str, c_ast.Node] = {}
        self.structs: Dict[str, Optional[c_ast.Struct]] = {}
        self.functions: Dict[str, Function] = {}
        for node in ast.ext:
            self._collect_structs(node)
            if isinstance(node, c_ast.Typedef):
                if node.name not in _PRELUDE_NAMES:
                    self.typedefs[node.name] = node.type
            elif isinstance(node, c_ast.Decl) and isinstance(node.type, c_ast.FuncDecl):
                name = node.name
                if name in self.functions:
                    raise HeaderError(f"{name} is declared twice")
                self.functions[name] = Function(name, self.ctype(node.type.type),
                                                self.params(node.type))

    def _collect_structs(self, node: c_ast.Node) -> None:
        for child in node:
            self._collect_structs(child)
        if isinstance(node, c_ast.Struct) and node.name:
            if node.decls is not None or node.name not in self.structs:
                self.structs[node.name] = node if node.decls is not None else None

    def params(self, func: c_ast.FuncDecl) -> Tuple[Tuple[str, CType], ...]:
        if func.args is None:
            raise HeaderError("a prototype without (void)")
        result = []
        for index, param in enumerate(func.args.params):
            if isinstance(param, c_ast.EllipsisParam):
                raise HeaderError("variadic functions cannot be bound with ctypes argtypes")
            ctype = self.ctype(param.type)
            if isinstance(ctype, Array):  # a parameter declared as an array is a pointer
                ctype = Pointer(ctype.element, "const" in getattr(param.type.type, "quals", []))
            if isinstance(ctype, Void):
                if len(func.args.params) != 1:
                    raise HeaderError("void among other parameters")
                return ()
            result.append((param.name or f"#{index + 1}", ctype))
        return tuple(result)

    def ctype(self, node: c_ast.Node) -> CType:
        if isinstance(node, c_ast.PtrDecl):
            inner = node.type
            const = "const" in getattr(inner, "quals", [])
            if isinstance(inner, c_ast.FuncDecl):
                return FunctionPointer(self.ctype(inner.type), self.params(inner), "function")
            pointee = self.ctype(inner)
            if isinstance(pointee, FunctionPointer):
                raise HeaderError("pointer to a function pointer")
            return Pointer(pointee, const)
        if isinstance(node, c_ast.TypeDecl):
            return self.ctype(node.type)
        if isinstance(node, c_ast.ArrayDecl):
            if not isinstance(node.dim, c_ast.Constant) or node.dim.type != "int":
                raise HeaderError("an array whose size is not an integer constant")
            return Array(self.ctype(node.type), int(node.dim.value.rstrip("uUlL"), 0))
        if isinstance(node, c_ast.Struct):
            return self.struct(node.name)
        if isinstance(node, c_ast.Enum):
            return INT_TYPES["int"]
        if isinstance(node, c_ast.IdentifierType):
            names = tuple(node.names)
            if len(names) == 1 and names[0] in self.typedefs:
                resolved = self.ctype(self.typedefs[names[0]])
                if isinstance(resolved, FunctionPointer):
                    return FunctionPointer(resolved.result, resolved.params, names[0])
                if isinstance(resolved, Int):
                    return Int(resolved.size, resolved.signed, f"{names[0]} ({resolved.spelling})")
                return resolved
            if len(names) == 1 and names[0] == "bool":
                return Bool()
            if len(names) == 1 and names[0] in INT_TYPES:
                return INT_TYPES[names[0]]
            spelling = _BASE_SPELLINGS.get(names)
            if spelling == "void":
                return Void()
            if spelling == "char":
                return Char()
            if spelling == "bool":
                return Bool()
            if spelling in INT_TYPES:
                return INT_TYPES[spelling]
            raise HeaderError(f"unknown type {' '.join(names)}")
        raise HeaderError(f"unsupported declarator {type(node).__name__}")

    def struct(self, tag: str) -> Struct:
        node = self.structs.get(tag)
        if node is None:
            return Struct(tag, None)
        fields = []
        for decl in node.decls:
            if decl.bitsize is not None:
                raise HeaderError(f"bit-field in struct {tag}")
            fields.append((decl.name, self.ctype(decl.type)))
        return Struct(tag, tuple(fields))


def parse_header(text: str) -> Dict[str, Function]:
    """Every function the header declares, by name."""
    code = PRELUDE + preprocess(text)
    try:
        ast = c_parser.CParser().parse(code, "yaok.h")
    except Exception as e:  # pycparser's ParseError; keep the message
        raise HeaderError(f"pycparser cannot parse the header: {e}") from e
    return _Model(ast).functions


def spell(ctype: CType) -> str:
    if isinstance(ctype, Array):
        return f"{spell(ctype.element)}[{ctype.length}]"
    if isinstance(ctype, Pointer):
        if isinstance(ctype.pointee, Pointer):  # T *const *: the const is the pointer's
            return spell(ctype.pointee) + ("const " if ctype.const_pointee else "") + "*"
        return ("const " if ctype.const_pointee else "") + spell(ctype.pointee) + " *"
    if isinstance(ctype, Struct):
        return f"struct {ctype.tag}"
    return ctype.spelling


# ---- the ctypes side ------------------------------------------------------------------

_SIGNED_CODES = set("bhilq")
_UNSIGNED_CODES = set("BHILQ")


def describe(t: Any) -> str:
    if t is None:
        return "None"
    if isinstance(t, type) and issubclass(t, ctypes._Pointer):
        return f"POINTER({describe(t._type_)})"
    if isinstance(t, type) and issubclass(t, ctypes._CFuncPtr):
        return f"CFUNCTYPE({describe(t._restype_)}, {', '.join(describe(a) for a in t._argtypes_)})"
    if isinstance(t, type) and issubclass(t, ctypes._SimpleCData) and t._type_ in _SIGNED_CODES | _UNSIGNED_CODES:
        kind = "signed" if t._type_ in _SIGNED_CODES else "unsigned"
        return f"{t.__name__} ({ctypes.sizeof(t)} bytes, {kind})"
    return getattr(t, "__name__", repr(t))


def _is_int(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, ctypes._SimpleCData) and \
        t._type_ in _SIGNED_CODES | _UNSIGNED_CODES


def _is_pointer(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, ctypes._Pointer)


def _byte_like(ctype: CType) -> bool:
    return isinstance(ctype, Char) or (isinstance(ctype, Int) and ctype.size == 1)


def mismatch(ctype: CType, t: Any, result: bool = False) -> Optional[str]:
    """Why the ctypes type ``t`` does not match the header's ``ctype``, or None."""
    ok = None
    bad = f"the header says {spell(ctype)}, the binding has {describe(t)}"
    if isinstance(ctype, Void):
        return ok if result and t is None else bad
    if isinstance(ctype, Int):
        if _is_int(t) and ctypes.sizeof(t) == ctype.size and (t._type_ in _SIGNED_CODES) == ctype.signed:
            return ok
        return bad
    if isinstance(ctype, Bool):
        return ok if t is ctypes.c_bool else bad
    if isinstance(ctype, Char):
        return ok if t is ctypes.c_char else bad
    if isinstance(ctype, Struct):
        return _struct_mismatch(ctype, t, bad)
    if isinstance(ctype, Array):
        if not (isinstance(t, type) and issubclass(t, ctypes.Array)) or t._length_ != ctype.length:
            return bad
        problem = mismatch(ctype.element, t._type_)
        return f"{bad}: {problem}" if problem else ok
    if isinstance(ctype, FunctionPointer):
        if not (isinstance(t, type) and issubclass(t, ctypes._CFuncPtr)):
            return bad
        if t._flags_ & ctypes._FUNCFLAG_PYTHONAPI or not t._flags_ & ctypes._FUNCFLAG_CDECL:
            return f"{bad} (not a plain CFUNCTYPE)"
        problem = mismatch(ctype.result, t._restype_, result=True)
        if problem:
            return f"{ctype.spelling} result: {problem}"
        if len(t._argtypes_) != len(ctype.params):
            return f"{ctype.spelling}: {len(ctype.params)} parameters in the header, {len(t._argtypes_)} bound"
        for (pname, ptype), arg in zip(ctype.params, t._argtypes_):
            problem = mismatch(ptype, arg)
            if problem:
                return f"{ctype.spelling} parameter {pname}: {problem}"
        return ok
    # Pointers.
    assert isinstance(ctype, Pointer)
    pointee = ctype.pointee
    if isinstance(pointee, Void):
        return ok if t is ctypes.c_void_p else bad
    if _byte_like(pointee):
        byte = ctypes.c_int8 if isinstance(pointee, Int) and pointee.signed else ctypes.c_uint8
        if ctype.const_pointee and isinstance(pointee, Char):
            allowed = [ctypes.c_char_p]
        elif ctype.const_pointee:
            allowed = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(byte)]
        else:  # written or owned by C: never a Python bytes object (c_char_p)
            allowed = [ctypes.c_void_p, ctypes.POINTER(byte), ctypes.POINTER(ctypes.c_char)]
        return ok if t in allowed else f"{bad} (allowed: {', '.join(describe(a) for a in allowed)})"
    if isinstance(pointee, (Int, Bool)):
        if _is_pointer(t) and mismatch(pointee, t._type_) is None:
            return ok
        return bad
    if isinstance(pointee, Struct):
        if not _is_pointer(t):
            return bad
        return _struct_mismatch(pointee, t._type_, bad)
    if isinstance(pointee, Pointer):
        # T **: an out-pointer. A library-allocated string/buffer may be kept as an address.
        if t is ctypes.POINTER(ctypes.c_void_p) and (_byte_like(pointee.pointee) or isinstance(pointee.pointee, Void)):
            return ok
        if _is_pointer(t) and mismatch(pointee, t._type_) is None:
            return ok
        return bad
    if isinstance(pointee, FunctionPointer):
        return bad
    return bad


def _struct_mismatch(struct: Struct, t: Any, bad: str) -> Optional[str]:
    if not (isinstance(t, type) and issubclass(t, ctypes.Structure)):
        return bad
    if t.__name__ != struct.tag:
        return f"{bad} (the Structure must be named {struct.tag})"
    if struct.fields is None:
        return None
    fields = getattr(t, "_fields_", None) or []
    if [f[0] for f in fields] != [name for name, _ in struct.fields]:
        return (f"struct {struct.tag} fields: header {[n for n, _ in struct.fields]}, "
                f"binding {[f[0] for f in fields]}")
    for (name, ftype), field in zip(struct.fields, fields):
        problem = mismatch(ftype, field[1])
        if problem:
            return f"struct {struct.tag} field {name}: {problem}"
    return None


def check_function(function: Function, restype: Any, argtypes: Sequence[Any]) -> List[str]:
    """Every way the declaration (restype, argtypes) differs from the header's function."""
    problems = []
    problem = mismatch(function.result, restype, result=True)
    if problem:
        problems.append(f"{function.name} result: {problem}")
    if len(argtypes) != len(function.params):
        problems.append(f"{function.name}: {len(function.params)} parameters in the header, "
                        f"{len(argtypes)} in the binding")
    for index, ((name, ctype), t) in enumerate(zip(function.params, argtypes)):
        problem = mismatch(ctype, t)
        if problem:
            problems.append(f"{function.name} parameter {index + 1} ({name}): {problem}")
    return problems
