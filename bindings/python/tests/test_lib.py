"""Loading, the ABI version check, and the shared plumbing in yaok._lib."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import yaok
from yaok import _lib, envelope, identity  # noqa: F401  (importing declares every signature)
from yaok.errors import AbiVersionMismatch, HandleClosed, LibraryNotFound

from conftest import REPO, header_defines, header_functions

CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler to build a fake library")


def build_fake_library(tmp_path: Path, source: str) -> Path:
    src = tmp_path / "fake.c"
    src.write_text(textwrap.dedent(source))
    out = tmp_path / "libfake.so"
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return out


def test_loaded_library_has_the_expected_abi():
    assert yaok.ABI_VERSION == 1
    assert yaok.abi_version() == yaok.ABI_VERSION == header_defines()["ABI_VERSION"]


def test_version_string_matches_header():
    d = header_defines()
    assert yaok.version_string() == f"{d['VERSION_MAJOR']}.{d['VERSION_MINOR']}.{d['VERSION_PATCH']}"


def test_library_path_is_reported():
    assert os.path.exists(yaok.library_path)
    assert Path(yaok.library_path).name.startswith("libyaok.so")


def test_status_str():
    assert yaok.status_str(0) == "OK"
    assert yaok.status_str(201) == "Invalid Ya OK QR code"
    assert yaok.status_str(-12345) == "Unknown status"


def test_every_header_function_is_declared_with_types():
    """ctypes defaults restype to int (truncating pointers) and does not check arguments:
    every function the header declares must have explicit argtypes and restype here."""
    functions = header_functions()
    assert len(functions) >= 22
    undeclared = [name for name in functions if getattr(_lib.lib, name).argtypes is None]
    assert undeclared == [], f"header functions without a Python declaration: {undeclared}"
    pointer_returning = ["yaok_version_string", "yaok_status_str", "yaok_last_error_message"]
    for name in pointer_returning:
        assert getattr(_lib.lib, name).restype is ctypes.c_char_p, name


def test_header_constants_match_python():
    d = header_defines()
    assert identity.PUBLIC_KEY_BYTES == d["PUBLIC_KEY_BYTES"]
    assert identity.IDENTITY_SECRET_BYTES == d["IDENTITY_SECRET_BYTES"]
    assert identity.FINGERPRINT_HEX == d["FINGERPRINT_HEX"]
    assert identity.FINGERPRINT_GROUPED == d["FINGERPRINT_GROUPED"]
    assert identity.FINGERPRINT_SHORT == d["FINGERPRINT_SHORT"]
    assert envelope.MESSAGE_ID_BYTES == d["MESSAGE_ID_BYTES"]
    assert envelope.MAX_MESSAGE_BYTES == d["MAX_MESSAGE_BYTES"]


# ---- refusing a library with another ABI

def test_abi_mismatch_is_refused(monkeypatch):
    monkeypatch.setattr(_lib, "ABI_VERSION", 2)
    with pytest.raises(AbiVersionMismatch) as info:
        _lib.load(yaok.library_path)
    assert info.value.expected == 2 and info.value.found == 1
    assert "ABI version" in str(info.value) and "libyaok.so.2" in str(info.value)
    assert isinstance(info.value, ImportError)


def test_expected_abi_argument():
    with pytest.raises(AbiVersionMismatch):
        _lib.load(yaok.library_path, expected_abi=7)
    assert _lib.load(yaok.library_path, expected_abi=1) is not None


@needs_cc
def test_a_library_with_another_abi_is_refused_at_import(tmp_path):
    fake = build_fake_library(tmp_path, """
        #include <stdint.h>
        uint32_t yaok_abi_version(void) { return 2; }
    """)
    env = dict(os.environ, YAOK_LIBRARY=str(fake))
    result = subprocess.run([sys.executable, "-c", "import yaok"], env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "AbiVersionMismatch" in result.stderr
    assert "has C ABI version 2" in result.stderr and "ABI version 1" in result.stderr


@needs_cc
def test_a_library_without_abi_version_is_refused(tmp_path):
    fake = build_fake_library(tmp_path, "int something_else(void) { return 0; }\n")
    with pytest.raises(LibraryNotFound, match="not a Ya OK library"):
        _lib.load(str(fake))


def test_yaok_library_pointing_nowhere_is_an_error(tmp_path):
    env = dict(os.environ, YAOK_LIBRARY=str(tmp_path / "missing.so"))
    result = subprocess.run([sys.executable, "-c", "import yaok"], env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "LibraryNotFound" in result.stderr and "YAOK_LIBRARY" in result.stderr


def test_yaok_library_env_var_is_used(tmp_path, monkeypatch):
    link = tmp_path / "libyaok-copy.so.1"
    link.symlink_to(yaok.library_path)
    monkeypatch.setenv("YAOK_LIBRARY", str(link))
    loaded = _lib.load()
    assert loaded._yaok_path == str(link)


def test_default_search_finds_the_repository_build(monkeypatch):
    monkeypatch.delenv("YAOK_LIBRARY", raising=False)
    repo_build = REPO / "build" / "lib" / "libyaok.so.1"
    assert repo_build.exists(), "run scripts/build-lib first"
    assert _lib.load()._yaok_path == str(repo_build)


# ---- check(), taking ownership

def test_check_raises_mapped_error_with_this_threads_message():
    _lib.check(0)
    raw = _lib.load(yaok.library_path).yaok_identity_new  # a fresh, undeclared function object
    raw.restype, raw.argtypes = ctypes.c_int32, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    out = ctypes.c_void_p()
    status = raw(b"A", ctypes.byref(out))  # no errcheck: the status comes back as a number
    assert out.value is None  # outputs are written only on success
    assert status == 200
    with pytest.raises(yaok.InvalidName, match="^Name must be 2-50 characters$") as info:
        _lib.check(status)
    assert info.value.status == 200


def test_take_string_and_take_bytes_copy_and_free(alice):
    with alice._borrow() as pointer:
        out = ctypes.c_void_p()
        identity._identity_name(pointer, ctypes.byref(out))
    assert out.value
    assert _lib.take_string(out) == "Alice"


def test_take_rejects_null():
    with pytest.raises(yaok.InternalError):
        _lib.take_string(ctypes.c_void_p())
    with pytest.raises(yaok.InternalError):
        _lib.take_bytes(ctypes.c_void_p(), ctypes.c_size_t(0))


def test_free_functions_accept_null():
    _lib.lib.yaok_string_free(None)
    _lib.lib.yaok_bytes_free(None, 0)
    _lib.lib.yaok_identity_free(None)
    _lib.lib.yaok_card_free(None)


# ---- OwnedHandle: exactly-once free, also across threads

class Recorder:
    def __init__(self):
        self.freed = []

    def __call__(self, pointer):
        self.freed.append(pointer)


def test_owned_handle_frees_once():
    free = Recorder()
    h = _lib.OwnedHandle(1234, free, "Thing")
    with h.borrow() as p:
        assert p == 1234
    h.close()
    h.close()
    assert free.freed == [1234]
    with pytest.raises(HandleClosed, match="Thing is closed"):
        with h.borrow():
            pass


def test_owned_handle_close_while_borrowed_defers_the_free():
    free = Recorder()
    h = _lib.OwnedHandle(99, free, "Thing")
    with h.borrow():
        with h.borrow():
            h.close()
            assert free.freed == [] and h.closed
        assert free.freed == []
    assert free.freed == [99]
    h.close()
    assert free.freed == [99]


def test_owned_handle_refuses_null():
    with pytest.raises(ValueError):
        _lib.OwnedHandle(None, Recorder(), "Thing")
