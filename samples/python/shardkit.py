"""shardkit.py - the old place of the Python binding, kept so scripts that
put samples/python on sys.path still `import shardkit`: this module makes
itself the real package, python/shardkit/ in the source tree (install that
with `pip install ./python` or `make install`; docs/python.md).
"""
import os as _os

_pkg = _os.path.normpath(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "..", "..",
                                       "python", "shardkit"))
# a package's attributes: relative imports (from ._lib import ...) and
# submodules (shardkit.torch) are then found in _pkg
__path__ = [_pkg]
__package__ = __name__
__file__ = _os.path.join(_pkg, "__init__.py")
with open(__file__) as _f:
    exec(compile(_f.read(), __file__, "exec"))
