"""setup.py - builds libshardkit.so from the shardkit source tree this
package sits in (the project's Makefile, into setuptools' build directory)
and bundles it in the package, so `pip install ./python` gives a package
that finds its library with nothing set, offline:

    pip install --no-build-isolation ./python

The metadata is in pyproject.toml.  The source tree is python/.. (pip
builds a local directory in place); $SHARDKIT_SRC names another.  Set
SHARDKIT_BUNDLE=0 to install the pure-Python package alone (it then finds
the library as docs/python.md says: $SHARDKIT_LIB, the install prefix,
the system's).  The library links the system's libjpeg, zstd, expat,
jansson (and opens libcurl, OpenSSL, libarchive and liburing when used), so the
wheel is for this machine, not for another distribution.

It also compiles shardkit._ext (shardkit/_ext.c: Dataset's lookups in C,
against lib/shardkit.h; it calls the library ctypes loads, so it links
none) as an optional extension: when it does not build (no C compiler, no
Python headers) pip warns and installs the rest, and Dataset uses ctypes
(shardkit.dataset.BACKEND says which).  SHARDKIT_EXT=0 skips it.
"""
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def source_root() -> str:
    root = os.environ.get("SHARDKIT_SRC") or os.path.dirname(HERE)
    for need in ("Makefile", os.path.join("lib", "shardkit.h")):
        if not os.path.isfile(os.path.join(root, need)):
            raise SystemExit("shardkit: %s has no %s: build from a shardkit source tree "
                             "(pip install ./python), set SHARDKIT_SRC to one, or "
                             "SHARDKIT_BUNDLE=0 for the package without its library"
                             % (root, need))
    return root


class BuildWithLibrary(build_py):
    """build_py, then libshardkit.so built by the Makefile and copied in."""

    def run(self) -> None:
        super().run()
        if os.environ.get("SHARDKIT_BUNDLE", "1") == "0":
            return
        root = source_root()
        temp = os.path.abspath(os.path.join(self.get_finalized_command("build").build_temp,
                                            "libshardkit"))
        jobs = str(max(1, min(os.cpu_count() or 1, 8)))
        cmd = ["make", "-C", root, "-j" + jobs, "BUILD=" + temp,
               os.path.join(temp, "libshardkit.so")]
        self.announce("building libshardkit: " + " ".join(cmd), level=2)
        subprocess.run(cmd, check=True)
        dest = os.path.join(self.build_lib, "shardkit", "libshardkit.so")
        self.mkpath(os.path.dirname(dest))
        shutil.copyfile(os.path.join(temp, "libshardkit.so"), dest)


class PlatformDistribution(Distribution):
    """The wheel holds a compiled library: tag it for this platform."""

    def has_ext_modules(self) -> bool:
        return bool(self.ext_modules) or os.environ.get("SHARDKIT_BUNDLE", "1") != "0"


def extensions() -> list:
    """shardkit._ext, optional (a failed build leaves the ctypes path)."""
    root = os.environ.get("SHARDKIT_SRC") or os.path.dirname(HERE)
    inc = os.path.join(root, "lib")
    if os.environ.get("SHARDKIT_EXT", "1") == "0" or not os.path.isfile(
            os.path.join(inc, "shardkit.h")):
        return []
    return [Extension("shardkit._ext", [os.path.join("shardkit", "_ext.c")], include_dirs=[inc],
                      extra_compile_args=["-std=c11", "-fvisibility=hidden"], optional=True)]


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=PlatformDistribution,
      ext_modules=extensions())
