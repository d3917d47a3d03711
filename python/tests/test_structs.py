"""Every ctypes mirror of a lib/shardkit.h struct has the C struct's size
and each field the C offset: a tiny C program compiled against the header
prints sizeof and offsetof, and every ctypes.Structure in any module of
the package must be in the table below (a new mirror without a C name
fails)."""
import ctypes
import importlib
import os
import pkgutil
import shutil
import subprocess

import pytest

import shardkit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: ctypes class -> (C type, the C field it stops before: None = the whole struct)
C_NAMES = {
    "_Error": ("sk_error", None), "ReaderOptions": ("sk_reader_options", None),
    "ReaderMember": ("sk_reader_member", None), "ReaderSample": ("sk_reader_sample", None),
    "ReaderState": ("sk_reader_state", None), "ReaderStats": ("sk_reader_stats", None),
    "ReaderPosition": ("sk_reader_position", None),
    "SampleRef": ("sk_sample_ref", None), "MemberRef": ("sk_member_ref", None),
    "Hit": ("sk_hit", None), "GetResult": ("sk_get_result", None),
    "S3Config": ("sk_s3_config", None), "PackStats": ("sk_pack_stats", None),
    "SampleMember": ("sk_sample_member", None),
    # a prefix: struct_size tells the library the image options are absent
    "PackOptions": ("sk_pack_options", None),
    "_StatsOptions": ("sk_stats_options", None),
}


def structs():
    """(name, class) of every ctypes.Structure the package defines, in any
    of its modules (shardkit.torch only where torch imports)."""
    found = {}
    for m in pkgutil.iter_modules(shardkit.__path__):
        try:
            mod = importlib.import_module("shardkit." + m.name)
        except ImportError:
            continue
        for n, c in vars(mod).items():
            if isinstance(c, type) and issubclass(c, ctypes.Structure) \
                    and c.__module__ == mod.__name__:
                found[n] = c
    return sorted(found.items())


def test_every_struct_is_checked():
    assert sorted(n for n, _ in structs()) == sorted(C_NAMES)


def test_sizes_and_offsets(tmp_path):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler")
    lines, want = [], []
    for name, cls in structs():
        ctype, stop = C_NAMES[name]
        if stop is None:
            lines.append('printf("%%zu\\n", sizeof(%s));' % ctype)
            want.append(("sizeof(%s)" % ctype, ctypes.sizeof(cls)))
        else:
            lines.append('printf("%%zu\\n", offsetof(%s, %s));' % (ctype, stop))
            want.append(("offsetof(%s, %s), the prefix's end" % (ctype, stop),
                         ctypes.sizeof(cls)))
        for f in cls._fields_:
            lines.append('printf("%%zu\\n", offsetof(%s, %s));' % (ctype, f[0]))
            want.append(("offsetof(%s, %s)" % (ctype, f[0]), getattr(cls, f[0]).offset))
    src = tmp_path / "sizes.c"
    src.write_text('#include <stddef.h>\n#include <stdio.h>\n#define SHARDKIT_UNSTABLE_API\n#include "shardkit.h"\n'
                   "int main(void)\n{\n    %s\n    return 0;\n}\n" % "\n    ".join(lines))
    exe = tmp_path / "sizes"
    subprocess.run([cc, "-std=c11", "-I", os.path.join(ROOT, "lib"), str(src), "-o", str(exe)],
                   check=True)
    got = [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True,
                                          check=True).stdout.split()]
    assert len(got) == len(want)
    bad = ["%s: C %d, ctypes %d" % (what, c, p) for (what, p), c in zip(want, got) if c != p]
    assert not bad, bad
