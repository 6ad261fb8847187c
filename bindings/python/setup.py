"""Build hooks for the ``yaok`` package; the metadata is in pyproject.toml.

Built from the source tree (``pip install bindings/python``) the package is pure Python and
finds libyaok at run time (``$YAOK_LIBRARY``, the repository's build, the system loader).
``scripts/build-wheel`` builds it from a copy with the library in ``yaok/libyaok.so.1``:
that file goes into the wheel, which is then tagged for the platform
(``py3-none-linux_x86_64``: any Python 3, as the library is loaded with ctypes, not as an
extension module).
"""

from pathlib import Path
from typing import Any, Dict

from setuptools import Distribution, setup

BUNDLED = any(p.name.startswith("libyaok.so") for p in (Path(__file__).resolve().parent / "yaok").iterdir())

cmdclass: Dict[str, Any] = {}
try:
    from setuptools.command.bdist_wheel import bdist_wheel  # setuptools >= 70.1
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel  # type: ignore[no-redef]
    except ImportError:
        bdist_wheel = None  # type: ignore[assignment,misc]

if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):  # type: ignore[misc,valid-type]
        def get_tag(self) -> Any:
            python, abi, platform = super().get_tag()
            return ("py3", "none", platform) if BUNDLED else (python, abi, platform)

    cmdclass["bdist_wheel"] = PlatformWheel



class LibraryDistribution(Distribution):
    """With the library bundled the wheel holds platform code: not "pure", so its files go
    to platlib, at the wheel's root."""

    def has_ext_modules(self) -> bool:
        return BUNDLED or bool(super().has_ext_modules())


setup(cmdclass=cmdclass, distclass=LibraryDistribution)
