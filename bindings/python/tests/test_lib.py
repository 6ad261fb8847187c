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
    assert envelope.MAX_RECEIVED_TEXT_BYTES == d["MAX_RECEIVED_TEXT_BYTES"]


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
def test_a_library_with_another_abi_is_refused_at_first_use(tmp_path):
    fake = build_fake_library(tmp_path, """
        #include <stdint.h>
        uint32_t yaok_abi_version(void) { return 2; }
    """)
    env = dict(os.environ, YAOK_LIBRARY=str(fake))
    result = subprocess.run([sys.executable, "-c", "import yaok; yaok.Identity.new('Alice')"],
                            env=env, capture_output=True, text=True)
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
    result = subprocess.run([sys.executable, "-c", "import yaok; yaok.Identity.new('Alice')"],
                            env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "LibraryNotFound" in result.stderr and "YAOK_LIBRARY" in result.stderr


# ---- loading lazily: `import yaok` and help(yaok) work without the library

def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=dict(os.environ, **env),
                          capture_output=True, text=True, timeout=120)


def test_import_and_help_work_without_the_library(tmp_path):
    missing = tmp_path / "missing" / "libyaok.so.1"
    result = run_python("""
        import pydoc, yaok
        from yaok import _lib
        text = pydoc.render_doc(yaok, renderer=pydoc.plaintext)
        assert "Ya OK core for Python" in text and "Node" in text, text[:500]
        for thing in (yaok.Node, yaok.Identity, yaok.envelope, yaok.errors, yaok.events):
            pydoc.render_doc(thing, renderer=pydoc.plaintext)
        assert _lib._library is None, "importing or reading the docs loaded the library"
        print("ok")
    """, YAOK_LIBRARY=str(missing))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_importing_does_not_load_the_library():
    result = run_python("""
        import yaok
        from yaok import _lib
        assert _lib._library is None
        yaok.Identity.new("Alice").close()
        assert _lib._library is not None
        print("ok")
    """, YAOK_LIBRARY=yaok.library_path)
    assert result.returncode == 0, result.stderr


def test_a_missing_library_is_one_clear_error_at_first_use(tmp_path):
    missing = tmp_path / "nowhere" / "libyaok.so.1"
    result = run_python("""
        import yaok
        yaok.Identity.new("Alice")
    """, YAOK_LIBRARY=str(missing))
    assert result.returncode != 0
    err = result.stderr
    assert "yaok.errors.LibraryNotFound:" in err
    assert err.count(str(missing)) == 1, err  # the file looked for, named once
    assert "scripts/build-lib" in err and "YAOK_LIBRARY" in err
    # One error, not an OSError with a second one raised while handling it.
    assert err.count("Traceback") == 1 and "OSError" not in err and "During handling" not in err


def test_the_default_search_names_each_place_once(tmp_path):
    # In a fresh process: this one has libyaok.so.1 loaded, so dlopen by SONAME finds it.
    env = {k: v for k, v in os.environ.items() if k not in ("YAOK_LIBRARY", "LD_LIBRARY_PATH")}
    script = textwrap.dedent(f"""
        import ctypes, pathlib
        try:
            ctypes.CDLL("libyaok.so.1")
            print("installed")
            raise SystemExit(0)
        except OSError:
            pass
        from yaok import _lib
        _lib._REPO_ROOT = pathlib.Path({str(tmp_path)!r})  # no repository build there
        _lib._PACKAGE_DIR = pathlib.Path({str(tmp_path / "bindings" / "python" / "yaok")!r})  # no bundled copy
        try:
            _lib.load()
        except _lib.LibraryNotFound as e:
            assert e.__cause__ is None and e.__context__ is None  # no OSError chained to it
            print(e)
    """)
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "yaok.h").write_text("/* a checkout */\n")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    if result.stdout.strip() == "installed":
        pytest.skip("a libyaok.so.1 is installed system-wide")
    message = result.stdout.strip()
    expected_bundled = str(tmp_path / "bindings" / "python" / "yaok" / "libyaok.so.1")
    expected_build = str(tmp_path / "build" / "lib" / "libyaok.so.1")
    assert message.count(expected_bundled) == 1 and message.index(expected_bundled) < message.index(expected_build), message
    assert message.count(expected_build) == 1, message
    # The bundled copy, the build, the system loader, the hint.
    assert message.count("libyaok.so.1") == 4, message
    assert "scripts/build-lib" in message and "YAOK_LIBRARY" in message


def test_an_installed_package_never_looks_outside_itself(tmp_path):
    """Review finding: three levels above an installed package (site-packages, or a
    --target directory) may be writable by others; only a checkout's build/lib is ours."""
    env = {k: v for k, v in os.environ.items() if k not in ("YAOK_LIBRARY", "LD_LIBRARY_PATH")}
    planted = tmp_path / "build" / "lib"
    planted.mkdir(parents=True)
    (planted / "libyaok.so.1").write_bytes(b"not a library")
    script = textwrap.dedent(f"""
        import pathlib
        from yaok import _lib
        _lib._REPO_ROOT = pathlib.Path({str(tmp_path)!r})
        _lib._PACKAGE_DIR = pathlib.Path({str(tmp_path / "site" / "yaok")!r})  # not bindings/python/yaok
        print("\\n".join(_lib._candidates(1)))
    """)
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert str(planted) not in result.stdout, result.stdout


def test_a_failed_load_is_retried_once_the_library_is_there(tmp_path):
    result = run_python(f"""
        import os, yaok
        try:
            yaok.Identity.new("Alice")
        except yaok.LibraryNotFound:
            pass
        else:
            raise SystemExit("loaded a missing library")
        os.environ["YAOK_LIBRARY"] = {yaok.library_path!r}
        with yaok.Identity.new("Alice") as alice:
            print(alice.name)
    """, YAOK_LIBRARY=str(tmp_path / "missing.so"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Alice"


def test_first_use_from_many_threads_loads_once():
    result = run_python("""
        import threading, yaok
        from yaok import _lib
        loads = []
        real_load = _lib.load
        def counting_load(*args, **kwargs):
            loads.append(1)
            return real_load(*args, **kwargs)
        _lib.load = counting_load
        barrier = threading.Barrier(8)
        names = []
        def work(i):
            barrier.wait()
            with yaok.Identity.new(f"Person {i}") as me:
                names.append(me.name)
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        assert len(names) == 8 and len(loads) == 1, (names, loads)
        print("ok")
    """, YAOK_LIBRARY=yaok.library_path)
    assert result.returncode == 0, result.stderr


def test_load_library_loads_now_and_returns_the_path():
    result = run_python("""
        import yaok
        from yaok import _lib
        path = yaok.load_library()
        assert _lib._library is not None and path == yaok.library_path
        assert yaok.load_library() == path
        print(path)
    """, YAOK_LIBRARY=yaok.library_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == yaok.library_path


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


def test_a_function_the_library_lacks_is_a_clear_error():
    missing = _lib.CFunction("yaok_no_such_function", None, ())
    with pytest.raises(LibraryNotFound, match="has no function yaok_no_such_function"):
        missing()


def test_a_function_is_declared_once():
    with pytest.raises(ValueError, match="yaok_status_str is declared twice"):
        _lib.declare("yaok_status_str", ctypes.c_char_p, _lib.STATUS)
    assert _lib.declarations()["yaok_status_str"] is _lib._status_str


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
