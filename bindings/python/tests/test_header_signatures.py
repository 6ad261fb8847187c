"""The ctypes declarations against include/yaok.h, parsed with pycparser (tests/c_header.py).

Every function the header declares must be bound (declared with yaok._lib.declare) with
the header's result and parameter types, and the binding must bind nothing else. The tests
follow the header: adding, removing or changing a function there needs no edit here, only
the matching declare(...) line in the binding.
"""

from __future__ import annotations

import ctypes
from typing import Any, Dict, List

import pytest

import yaok  # noqa: F401  (importing the package imports every module, which declares its functions)
from yaok import _lib

import c_header
from c_header import check_function, parse_header
from conftest import header_functions, header_text

HEADER = parse_header(header_text())


def declared() -> Dict[str, _lib.CFunction]:
    return _lib.declarations()


def test_the_header_parses_and_agrees_with_the_plain_text_scan():
    assert len(HEADER) >= 20
    assert sorted(HEADER) == header_functions()


def test_every_header_function_is_bound():
    missing = sorted(set(HEADER) - set(declared()))
    assert missing == [], f"functions in include/yaok.h without a declare(...) in the binding: {missing}"


def test_every_bound_function_is_in_the_header():
    extra = sorted(set(declared()) - set(HEADER))
    assert extra == [], f"the binding declares functions include/yaok.h does not have: {extra}"


@pytest.mark.parametrize("name", sorted(HEADER))
def test_signature_matches_the_header(name: str):
    fn = declared().get(name)
    if fn is None:
        pytest.fail(f"{name} is not bound")
    problems = check_function(HEADER[name], fn.restype, fn.argtypes)
    assert problems == [], "\n".join(problems)


def test_the_library_has_every_header_function_with_the_declared_types():
    library = _lib.library()
    for name, fn in declared().items():
        assert hasattr(library, name), f"{_lib.load_library()} does not export {name}"
        c_function = getattr(library, name)
        assert c_function.restype is fn.restype or (fn.restype is None and c_function.restype is None), name
        assert list(c_function.argtypes) == list(fn.argtypes), name
        assert (c_function.errcheck is _lib._errcheck) == (fn.restype is _lib.STATUS), name


def test_nothing_is_bound_around_declare():
    """A function typed directly on the CDLL (lib.yaok_x.argtypes = ...) escapes the checks
    above; the CDLL caches every function looked up on it, so such a one shows here."""
    looked_up = sorted(name for name in vars(_lib.library()) if name.startswith("yaok_"))
    assert set(looked_up) <= set(declared()), sorted(set(looked_up) - set(declared()))


# ---- the checker itself catches what it is meant to catch (on the real header) ----------

def wrong_types_for(t: Any) -> List[Any]:
    """Types that must never be accepted where the binding (correctly) has ``t``."""
    wrong: List[Any] = [ctypes.c_int16, ctypes.c_double]
    if c_header._is_int(t):
        signed = t._type_ in c_header._SIGNED_CODES
        same_size_other_sign = {
            (1, True): ctypes.c_uint8, (1, False): ctypes.c_int8,
            (2, True): ctypes.c_uint16, (2, False): ctypes.c_int16,
            (4, True): ctypes.c_uint32, (4, False): ctypes.c_int32,
            (8, True): ctypes.c_uint64, (8, False): ctypes.c_int64}[(ctypes.sizeof(t), signed)]
        other_size = {4: (ctypes.c_int64 if signed else ctypes.c_uint64)}.get(
            ctypes.sizeof(t), ctypes.c_int32 if signed else ctypes.c_uint32)
        wrong += [same_size_other_sign, other_size, ctypes.c_void_p]
    else:
        wrong += [ctypes.c_int64, ctypes.c_size_t]
    return [w for w in wrong if w is not t]


def test_a_wrong_type_in_any_parameter_of_any_function_is_caught():
    """Replace each parameter's type in turn by wrong ones (int32 for int64, the other
    signedness, a plain integer for a pointer, ...): each must be reported."""
    checked = 0
    for name, fn in declared().items():
        if name not in HEADER or check_function(HEADER[name], fn.restype, fn.argtypes):
            continue  # not in the header, or already wrong: the tests above report it
        for index, t in enumerate(fn.argtypes):
            for wrong in wrong_types_for(t):
                argtypes = list(fn.argtypes)
                argtypes[index] = wrong
                problems = check_function(HEADER[name], fn.restype, argtypes)
                assert problems, f"{name} parameter {index + 1}: {wrong.__name__} instead of {t} went unnoticed"
                checked += 1
        for wrong in [ctypes.c_int16, ctypes.c_double]:
            assert check_function(HEADER[name], wrong, fn.argtypes), f"{name} result {wrong}"
        assert check_function(HEADER[name], fn.restype, list(fn.argtypes) + [ctypes.c_int32])
        if fn.argtypes:
            assert check_function(HEADER[name], fn.restype, list(fn.argtypes)[:-1])
    assert checked > 100


# ---- the checker on a made-up header: each rule, both ways --------------------------------

SAMPLE = """
#ifndef SAMPLE_H
#define SAMPLE_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef int32_t yaok_status;
typedef struct yaok_node yaok_node;
typedef struct yaok_thing yaok_thing;
typedef struct yaok_event { uint32_t kind; const char *json; } yaok_event;
typedef void (*yaok_event_callback)(void *user_data, const yaok_event *event);
#define YAOK_SOMETHING 1u /* a comment */
#define YAOK_ID_BYTES 16
typedef struct yaok_info {
    int64_t contact_id;
    uint8_t message_id[YAOK_ID_BYTES];
    char label[8];
    yaok_event event;
} yaok_info;
yaok_status yaok_thing_show(yaok_node *node, int64_t contact_id, char **out_json);
yaok_status yaok_thing_seal(const yaok_thing *thing, const uint8_t *body, size_t body_len,
                            uint8_t **out, size_t *out_len);
yaok_status yaok_thing_keys(const yaok_thing *thing, uint8_t *out_key);
yaok_status yaok_thing_open(const yaok_thing *const *things, size_t count, yaok_thing **out);
yaok_status yaok_thing_listen(yaok_node *node, yaok_event_callback callback, void *user_data);
yaok_status yaok_thing_info(yaok_node *node, const uint8_t message_id[YAOK_ID_BYTES], yaok_info *out);
const char *yaok_thing_name(void);
void yaok_thing_free(char *s);
#if defined(YAOK_SOMETHING) && !defined(__cplusplus)
uint32_t yaok_thing_count(void);
#else
int yaok_thing_never(void);
#endif
#ifdef __cplusplus
}
#endif
#endif
"""


class yaok_node(ctypes.Structure):
    pass


class yaok_thing(ctypes.Structure):
    pass


class yaok_other(ctypes.Structure):
    pass


class yaok_event(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_uint32), ("json", ctypes.c_char_p)]


class yaok_info(ctypes.Structure):
    _fields_ = [("contact_id", ctypes.c_int64), ("message_id", ctypes.c_uint8 * 16),
                ("label", ctypes.c_char * 8), ("event", yaok_event)]


class yaok_info_short_id(ctypes.Structure):
    _fields_ = [("contact_id", ctypes.c_int64), ("message_id", ctypes.c_uint8 * 15),
                ("label", ctypes.c_char * 8), ("event", yaok_event)]


class yaok_info_int32(ctypes.Structure):
    _fields_ = [("contact_id", ctypes.c_int32), ("message_id", ctypes.c_uint8 * 16),
                ("label", ctypes.c_char * 8), ("event", yaok_event)]


yaok_info_short_id.__name__ = yaok_info_int32.__name__ = "yaok_info"

Node, Thing = ctypes.POINTER(yaok_node), ctypes.POINTER(yaok_thing)
CharOut = ctypes.POINTER(ctypes.c_void_p)
Callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(yaok_event))

SAMPLE_FUNCTIONS = parse_header(SAMPLE)
GOOD = {
    "yaok_thing_show": (ctypes.c_int32, [Node, ctypes.c_int64, CharOut]),
    "yaok_thing_seal": (ctypes.c_int32, [Thing, ctypes.c_char_p, ctypes.c_size_t, CharOut,
                                         ctypes.POINTER(ctypes.c_size_t)]),
    "yaok_thing_keys": (ctypes.c_int32, [Thing, ctypes.POINTER(ctypes.c_uint8)]),
    "yaok_thing_open": (ctypes.c_int32, [ctypes.POINTER(Thing), ctypes.c_size_t, ctypes.POINTER(Thing)]),
    "yaok_thing_listen": (ctypes.c_int32, [Node, Callback, ctypes.c_void_p]),
    "yaok_thing_info": (ctypes.c_int32, [Node, ctypes.c_char_p, ctypes.POINTER(yaok_info)]),
    "yaok_thing_name": (ctypes.c_char_p, []),
    "yaok_thing_free": (None, [ctypes.c_void_p]),
    "yaok_thing_count": (ctypes.c_uint32, []),
}


def test_sample_header_parses_as_a_c_compiler_would_see_it():
    assert sorted(SAMPLE_FUNCTIONS) == sorted(GOOD)  # not yaok_thing_never (#else branch)


@pytest.mark.parametrize("name", sorted(GOOD))
def test_sample_good_declarations_pass(name):
    restype, argtypes = GOOD[name]
    assert check_function(SAMPLE_FUNCTIONS[name], restype, argtypes) == []


class yaok_event_wrong(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_uint64), ("json", ctypes.c_char_p)]


yaok_event_wrong.__name__ = "yaok_event"


@pytest.mark.parametrize("name,index,wrong,expect", [
    # int32 where the header says int64: the case that motivated this test
    ("yaok_thing_show", 1, ctypes.c_int32, "int64_t"),
    ("yaok_thing_show", 1, ctypes.c_uint64, "int64_t"),
    ("yaok_thing_seal", 2, ctypes.c_uint32, "size_t"),
    ("yaok_thing_seal", 4, ctypes.POINTER(ctypes.c_uint32), "size_t *"),
    ("yaok_thing_seal", 1, ctypes.c_int64, "const uint8_t *"),
    # a buffer C writes into must not be a Python bytes object
    ("yaok_thing_keys", 1, ctypes.c_char_p, "uint8_t *"),
    ("yaok_thing_free", 0, ctypes.c_char_p, "char *"),
    # handles: the right struct, the right depth
    ("yaok_thing_show", 0, Thing, "must be named yaok_node"),
    ("yaok_thing_show", 0, ctypes.c_void_p, "struct yaok_node *"),
    ("yaok_thing_open", 2, CharOut, "struct yaok_thing **"),
    ("yaok_thing_open", 0, Thing, "const struct yaok_thing *const *"),
    ("yaok_thing_open", 0, ctypes.POINTER(ctypes.POINTER(yaok_other)), "yaok_thing"),
    # callbacks and the structs they see
    ("yaok_thing_listen", 1, ctypes.CFUNCTYPE(None, ctypes.c_void_p), "parameters"),
    ("yaok_thing_listen", 1, ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(yaok_event)),
     "result"),
    ("yaok_thing_listen", 1, ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(yaok_event_wrong)),
     "field kind"),
    ("yaok_thing_listen", 1, ctypes.PYFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(yaok_event)),
     "CFUNCTYPE"),
    ("yaok_thing_listen", 1, ctypes.c_void_p, "yaok_event_callback"),
    # typed structs: field types, array lengths, nested structs
    ("yaok_thing_info", 2, ctypes.POINTER(yaok_info_short_id), "field message_id"),
    ("yaok_thing_info", 2, ctypes.POINTER(yaok_info_int32), "field contact_id"),
    ("yaok_thing_info", 1, ctypes.c_int64, "const uint8_t *"),  # an array parameter is a pointer
])
def test_sample_wrong_declarations_are_reported(name, index, wrong, expect):
    restype, argtypes = GOOD[name]
    argtypes = list(argtypes)
    argtypes[index] = wrong
    problems = check_function(SAMPLE_FUNCTIONS[name], restype, argtypes)
    assert problems and expect in problems[0], problems


def test_sample_wrong_results_and_counts_are_reported():
    show = SAMPLE_FUNCTIONS["yaok_thing_show"]
    assert "result" in check_function(show, ctypes.c_int64, GOOD["yaok_thing_show"][1])[0]
    assert "result" in check_function(show, None, GOOD["yaok_thing_show"][1])[0]
    assert "3 parameters in the header, 2" in check_function(show, ctypes.c_int32, [Node, ctypes.c_int64])[0]
    name = SAMPLE_FUNCTIONS["yaok_thing_name"]
    assert check_function(name, ctypes.c_void_p, [])  # a static string is read as c_char_p
    assert check_function(SAMPLE_FUNCTIONS["yaok_thing_count"], ctypes.c_int32, [])


@pytest.mark.parametrize("text,complaint", [
    ("#define YAOK_API __attribute__((visibility(\"default\")))\nYAOK_API int yaok_x(void);", "YAOK_API"),
    ("#if YAOK_VERSION_MAJOR > 0\n#endif\n", "beyond this parser"),
    ("#ifdef X\n", "unbalanced"),
    ("int yaok_x(int a, ...);", "variadic"),
    ("int yaok_x();", "(void)"),
])
def test_what_the_parser_cannot_read_is_an_error_not_a_skip(text, complaint):
    with pytest.raises(c_header.HeaderError, match=__import__("re").escape(complaint)):
        parse_header(text)
